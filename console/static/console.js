// AQS console: small enhancements over pages that work without JavaScript.
// - [data-copy]: a copy button for the token secret (hidden until this script runs), and the
//   secret's field selecting all of it when focused, ready to copy by hand;
// - [data-slug-source]: the queue's address previewed as the name is typed;
// - [data-refresh]: the Overview's live figures (and its chart) fetched again every few seconds and
//   merged in place (`morph`): only changed text and attributes are written, so keyboard focus, an
//   opened "Numbers per day" and a screen reader's position stay where they were;
// - time[datetime]: the exact UTC time the server wrote becomes "5 min ago", the exact time kept
//   as the hover title (without this script the exact UTC time is what shows). A preposition
//   that only fits the exact time ("at", "since") is written inside the element as
//   .when-word, so it goes with it: "Due again at 09:30 UTC" becomes "Due again in 14 minutes".
// - svg[data-chart] .hit: with the pointer over a point of a line chart, its legend names that
//   point and each series' value there (from the column's data-values); leaving the chart puts
//   the summaries back (data-summary). From the keyboard, with the chart focused: the arrow keys
//   step through the points, Home and End go to the first and last, Escape leaves. Without this
//   script the column's <title> is the tooltip.
"use strict";

// The legend of chart `id` shows the point of column `hit`, or its summaries when `hit` is null.
const showPoint = (id, hit) => {
  const legend = document.getElementById(id + "-legend");
  if (!legend) return;
  const values = hit ? hit.dataset.values.split("|") : [];
  const when = document.getElementById(id + "-when");
  if (when) when.textContent = hit ? hit.dataset.label : when.dataset.summary;
  legend.querySelectorAll("strong[data-summary]").forEach((strong, i) => {
    strong.textContent = hit ? values[i] ?? "" : strong.dataset.summary;
  });
  legend.classList.toggle("pointing", Boolean(hit));
  const svg = document.querySelector(`svg[data-chart="${id}"]`);
  if (svg) svg.querySelectorAll(".hit").forEach((h) => h.classList.toggle("current", h === hit));
};
// The column under the pointer, per chart, as its index: a refresh replaces the legend's text and
// the columns' values, and the point is shown again from the fresh ones.
const pointed = new Map();
const showPointed = (root) => {
  for (const [id, index] of pointed) {
    const svg = root.querySelector(`svg[data-chart="${id}"]`);
    const hit = svg && svg.querySelectorAll(".hit")[index];
    if (hit) showPoint(id, hit);
  }
};

// Makes `old`'s children look like `fresh`'s while keeping every node that is still there: text
// and attributes are updated in place and only a node whose kind changed is replaced. Children
// are paired in order, whitespace between elements left out (the page and the fragment indent
// differently). `open` is the reader's, not the server's, and is left as it is.
const significant = (node) => node.nodeType !== Node.TEXT_NODE || node.nodeValue.trim() !== "";
const morph = (old, fresh) => {
  const kids = [...old.childNodes].filter(significant);
  const freshKids = [...fresh.childNodes].filter(significant);
  freshKids.forEach((kid, i) => {
    const mine = kids[i];
    if (!mine) return old.appendChild(kid);
    if (mine.nodeType !== kid.nodeType || mine.nodeName !== kid.nodeName) return mine.replaceWith(kid);
    if (mine.nodeType !== Node.ELEMENT_NODE) {
      if (mine.nodeValue !== kid.nodeValue) mine.nodeValue = kid.nodeValue;
      return;
    }
    for (const { name, value } of [...kid.attributes]) {
      if (mine.getAttribute(name) !== value) mine.setAttribute(name, value);
    }
    for (const { name } of [...mine.attributes]) {
      if (!kid.hasAttribute(name) && name !== "open") mine.removeAttribute(name);
    }
    morph(mine, kid);
  });
  kids.slice(freshKids.length).forEach((kid) => kid.remove());
};

const relative = (root) => {
  const now = Date.now();
  for (const time of root.querySelectorAll("time[datetime]")) {
    const at = Date.parse(time.getAttribute("datetime"));
    if (Number.isNaN(at)) continue;
    if (!time.dataset.exact) {
      const word = time.querySelector(".when-word");
      time.dataset.exact = (word ? time.textContent.slice(word.textContent.length) : time.textContent).trim();
    }
    time.title = time.dataset.exact;
    const secs = Math.round((at - now) / 1000);
    const abs = Math.abs(secs);
    const [value, unit] =
      abs < 60 ? [secs, "second"] :
      abs < 3600 ? [Math.round(secs / 60), "minute"] :
      abs < 86400 ? [Math.round(secs / 3600), "hour"] :
      [Math.round(secs / 86400), "day"];
    time.textContent = abs < 10 ? "just now" : new Intl.RelativeTimeFormat("en", { numeric: "auto" }).format(value, unit);
  }
};

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("[data-copy]")) {
    const input = document.getElementById(button.dataset.copy);
    const status = button.closest(".secret")?.querySelector(".copy-status");
    if (!input) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      let copied = false;
      try {
        await navigator.clipboard.writeText(input.value);
        copied = true;
      } catch (_) {
        input.select();
        copied = document.execCommand && document.execCommand("copy");
      }
      if (status) status.textContent = copied ? "Copied to the clipboard." : "Select the secret and copy it.";
      button.textContent = copied ? "Copied" : "Copy";
    });
  }

  for (const field of document.querySelectorAll("textarea.secret-value")) {
    field.addEventListener("focus", () => field.select());
  }

  for (const input of document.querySelectorAll("[data-slug-source]")) {
    const output = document.getElementById("slug-preview");
    if (!output) continue;
    let timer;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const url = input.dataset.slugSource + "?name=" + encodeURIComponent(input.value);
        try {
          const response = await fetch(url, { credentials: "same-origin" });
          if (response.ok && !response.redirected) output.textContent = await response.text();
        } catch (_) {
          // The "Preview address" button still works.
        }
      }, 250);
    });
  }

  for (const region of document.querySelectorAll("[data-refresh]")) {
    const every = Math.max(2, Number(region.dataset.refreshSecs) || 5) * 1000;
    const tick = async () => {
      if (document.hidden) return;
      try {
        const response = await fetch(region.dataset.refresh, { credentials: "same-origin" });
        // A redirect means the session ended: stop rather than paint the log-in page here.
        if (!response.ok || response.redirected) return clearInterval(timer);
        const fresh = document.createElement(region.tagName);
        fresh.innerHTML = await response.text();
        morph(region, fresh);
        showPointed(region);
        relative(region);
      } catch (_) {
        // Offline for a moment: try again on the next tick.
      }
    };
    const timer = setInterval(tick, every);
  }

  document.addEventListener("pointerover", (event) => {
    const hit = event.target instanceof Element && event.target.closest("svg[data-chart] .hit");
    if (!hit) return;
    const id = hit.ownerSVGElement.dataset.chart;
    pointed.set(id, [...hit.parentNode.querySelectorAll(".hit")].indexOf(hit));
    showPoint(id, hit);
  });
  document.addEventListener("pointerout", (event) => {
    const svg = event.target instanceof Element && event.target.closest("svg[data-chart]");
    if (!svg || (event.relatedTarget instanceof Node && svg.contains(event.relatedTarget))) return;
    pointed.delete(svg.dataset.chart);
    showPoint(svg.dataset.chart, null);
  });

  const keys = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity };
  document.addEventListener("keydown", (event) => {
    const scroll = event.target instanceof Element && event.target.matches(".chart-scroll") && event.target;
    const svg = scroll && scroll.querySelector("svg[data-chart]");
    if (!svg || !(event.key in keys || event.key === "Escape")) return;
    const id = svg.dataset.chart;
    const hits = svg.querySelectorAll(".hit");
    if (event.key === "Escape" || hits.length === 0) {
      pointed.delete(id);
      showPoint(id, null);
      return;
    }
    const from = pointed.has(id) ? pointed.get(id) : hits.length;
    const index = Math.max(0, Math.min(hits.length - 1, from + keys[event.key]));
    pointed.set(id, index);
    showPoint(id, hits[index]);
    event.preventDefault();
  });
  document.addEventListener("focusout", (event) => {
    const svg = event.target instanceof Element && event.target.matches(".chart-scroll") && event.target.querySelector("svg[data-chart]");
    if (!svg) return;
    pointed.delete(svg.dataset.chart);
    showPoint(svg.dataset.chart, null);
  });

  relative(document);
  setInterval(() => relative(document), 30000);
});
