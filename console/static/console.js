// AQS console: small enhancements over pages that work without JavaScript.
// - [data-copy]: a copy button for the token secret (hidden until this script runs);
// - [data-slug-source]: the queue's address previewed as the name is typed;
// - [data-refresh]: the Overview's live figures fetched again every few seconds, in place.
"use strict";

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
        region.innerHTML = await response.text();
      } catch (_) {
        // Offline for a moment: try again on the next tick.
      }
    };
    const timer = setInterval(tick, every);
  }
});
