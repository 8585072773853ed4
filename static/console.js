// Copy buttons for the console (the client id and the secret shown once) and the account's
// authenticator set-up (the key; data-copy-value when what is copied differs from what is shown,
// as the key without its grouping spaces). Loaded as a file:
// the Content-Security-Policy allows no inline script. Without JavaScript the buttons stay
// hidden and the values can be selected by hand.
(function () {
  "use strict";

  function announce(text) {
    var status = document.getElementById("copy-status");
    if (status) { status.textContent = text; }
  }

  function selectText(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copy(button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    var text = button.getAttribute("data-copy-value") || source.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () {
        button.textContent = "Copied";
        announce("Copied to the clipboard.");
      }, function () {
        selectText(source);
        announce("Could not copy automatically: the text is selected, press Ctrl+C (or ⌘C).");
      });
    } else {
      selectText(source);
      announce("The text is selected: press Ctrl+C (or ⌘C) to copy it.");
    }
  }

  // On a phone the navigation is one row that scrolls sideways: bring the current page's link into it.
  function showCurrentSection() {
    var nav = document.querySelector(".console-nav");
    var current = nav && nav.querySelector('[aria-current="page"]');
    if (current && nav.scrollWidth > nav.clientWidth) {
      nav.scrollLeft = Math.max(0, current.offsetLeft - nav.offsetLeft - 16);
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    showCurrentSection();
    var buttons = document.querySelectorAll("button[data-copy]");
    Array.prototype.forEach.call(buttons, function (button) {
      button.hidden = false;
      button.addEventListener("click", function () { copy(button); });
    });
  });
})();
