// The upload page's progress, while the upload is checked and pushed: reads the progress every 1.5 s, moves the bar,
// and reloads the page once the status changes (the requests and problems are then shown by the server).
(function () {
  'use strict';

  var panel = document.querySelector('[data-poll]');
  if (!panel || !window.fetch) return;
  var url = panel.getAttribute('data-poll');
  var status = panel.getAttribute('data-status');
  var bar = panel.querySelector('progress');
  var text = panel.querySelector('[data-rows-text]');
  var format = new Intl.NumberFormat('en');
  var failures = 0;

  function tick() {
    fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (answer) {
        if (!answer.ok) throw new Error('HTTP ' + answer.status);
        return answer.json();
      })
      .then(function (progress) {
        failures = 0;
        if (progress.status !== status) {
          // Without the query: the notice of the upload's acceptance is past.
          window.location.replace(window.location.pathname);
          return;
        }
        if (progress.rowCount !== null && bar && text) {
          bar.max = Math.max(progress.rowCount, 1);
          bar.value = progress.rowsDone;
          text.textContent = format.format(progress.rowsDone) + ' of ' + format.format(progress.rowCount) + (progress.rowCount === 1 ? ' row' : ' rows') + ' pushed';
        }
        setTimeout(tick, 1500);
      })
      .catch(function () {
        // A few misses in a row (signed out, offline): stop; the page's Reload link still works.
        failures += 1;
        if (failures < 5) setTimeout(tick, 3000);
      });
  }

  setTimeout(tick, 1500);
})();
