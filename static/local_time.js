// Moments on the member's pages in the member's own time zone: every <time data-local> the
// server wrote in UTC (app/web/humanize.py `local_time`) is rewritten with the browser's zone and
// language; the exact UTC time stays in its title. Loaded as a file: the Content-Security-Policy
// allows no inline script. Without JavaScript the UTC text stays, saying "UTC".
(function () {
  "use strict";

  var WITH_TIME = { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
                    timeZoneName: "short" };
  var DATE_ONLY = { year: "numeric", month: "short", day: "numeric" };

  document.addEventListener("DOMContentLoaded", function () {
    if (!window.Intl || !Intl.DateTimeFormat) { return; }
    var withTime = new Intl.DateTimeFormat(undefined, WITH_TIME);
    var dateOnly = new Intl.DateTimeFormat(undefined, DATE_ONLY);
    Array.prototype.forEach.call(document.querySelectorAll("time[data-local]"), function (node) {
      var moment = new Date(node.getAttribute("datetime"));
      if (isNaN(moment.getTime())) { return; }
      node.textContent = (node.getAttribute("data-local") === "date" ? dateOnly : withTime).format(moment);
      if (node.title.indexOf("UTC") !== -1 && node.title.indexOf("(") === -1) {
        node.title = node.title + " (your time zone: " + withTime.resolvedOptions().timeZone + ")";
      }
    });
  });
}());
