// An app logo that fails to load (a dead link, or blocked by the CSP) is removed, leaving the
// app's initial drawn beneath it (templates/_app_logo.html). Without this script the initial
// still shows through the failed image, which draws nothing.
(function () {
  "use strict";
  function drop(img) { img.remove(); }
  document.querySelectorAll("img.app-logo-img").forEach(function (img) {
    if (img.complete && img.naturalWidth === 0) { drop(img); return; }
    img.addEventListener("error", function () { drop(img); });
  });
})();
