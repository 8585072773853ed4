// The recovery codes page: Copy and Print buttons, and "I have saved them" (a link) held back until the
// codes were copied, downloaded (the page's .txt link) or printed - they are shown only once.
// Loaded as a file: the Content-Security-Policy allows no inline script. Without JavaScript the
// download link and "I have saved them" work as they are.
(function () {
  "use strict";

  document.addEventListener("DOMContentLoaded", function () {
    var list = document.getElementById("recovery-codes");
    var done = document.getElementById("saved-them");
    var status = document.getElementById("recovery-status");
    if (!list || !done) { return; }
    var codes = Array.prototype.map.call(list.querySelectorAll("code"), function (c) {
      return c.textContent.trim();
    }).join("\n");

    function say(text) { if (status) { status.textContent = text; } }

    // A link held back: no href (so neither a click nor Enter follows it), marked aria-disabled.
    var href = done.getAttribute("href");
    function hold() {
      done.removeAttribute("href");
      done.setAttribute("aria-disabled", "true");
      done.setAttribute("role", "link");
    }
    function release() {
      done.setAttribute("href", href);
      done.removeAttribute("aria-disabled");
    }

    function saved(how) {
      release();
      say(how + " Once they are somewhere safe, continue.");
    }

    function selectCodes() {
      var range = document.createRange();
      range.selectNodeContents(list);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }

    hold();
    say("Copy, download or print your codes first.");

    var copy = document.querySelector("[data-recovery=copy]");
    var print = document.querySelector("[data-recovery=print]");
    var download = document.querySelector("[data-recovery=download]");
    copy.hidden = false;
    print.hidden = false;

    copy.addEventListener("click", function () {
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(codes).then(function () {
          copy.textContent = "Copied";
          saved("Copied to the clipboard.");
        }, function () {
          selectCodes();
          say("Could not copy automatically: the codes are selected, press Ctrl+C (or ⌘C).");
          release();
        });
      } else {
        selectCodes();
        say("The codes are selected: press Ctrl+C (or ⌘C) to copy them.");
        release();
      }
    });
    download.addEventListener("click", function () { saved("Downloaded as credits-id-recovery-codes.txt."); });
    print.addEventListener("click", function () {
      window.print();
      saved("Sent to the printer.");
    });
  });
}());
