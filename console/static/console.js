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
"use strict";

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
        relative(region);
      } catch (_) {
        // Offline for a moment: try again on the next tick.
      }
    };
    const timer = setInterval(tick, every);
  }

  relative(document);
  setInterval(() => relative(document), 30000);
});
