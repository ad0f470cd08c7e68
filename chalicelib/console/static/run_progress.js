// pawl console: live progress of a queued or running run, without a reload.
// Every element with data-progress names its run's progress.json; this polls it every
// two seconds (same origin, the session cookie), writes each figure into the element's
// [data-field] children as text, and stops when the run has ended, reloading the page
// once then so the final verdict shows. Without JavaScript the page is complete as served.
"use strict";
(function () {
  var INTERVAL_MS = 2000;
  var reloading = false;

  function show(element, figures) {
    element.querySelectorAll("[data-field]").forEach(function (cell) {
      var name = cell.getAttribute("data-field");
      if (Object.prototype.hasOwnProperty.call(figures, name)) {
        cell.textContent = String(figures[name]);
      }
    });
  }

  function follow(element) {
    var url = element.getAttribute("data-progress");
    function poll() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (answer) {
          if (!answer.ok) {
            throw new Error("progress answered " + answer.status);
          }
          return answer.json();
        })
        .then(function (figures) {
          show(element, figures);
          if (!figures.finished) {
            window.setTimeout(poll, INTERVAL_MS);
          } else if (!reloading) {
            reloading = true;
            window.location.reload();
          }
        })
        .catch(function () {
          element.setAttribute("data-progress-stopped", "");
        });
    }
    window.setTimeout(poll, INTERVAL_MS);
  }

  document.querySelectorAll("[data-progress]").forEach(follow);
})();
