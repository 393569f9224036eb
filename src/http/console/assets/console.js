// The console's only script: a progressive enhancement, every page works without it.
(function () {
  'use strict';

  // Times: the server writes UTC; show them in the user's own zone, with the UTC text on hover (title).
  var format = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  document.querySelectorAll('time[data-local]').forEach(function (element) {
    var date = new Date(element.getAttribute('datetime'));
    if (isNaN(date.getTime())) return;
    element.title = element.textContent.trim();
    element.textContent = format.format(date);
  });
  // Calendar dates (an IRM's issue date, an invoice's): a day, not a moment, so no zone; the same style as the times.
  var dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
  document.querySelectorAll('time[data-day]').forEach(function (element) {
    var date = new Date(element.getAttribute('datetime') + 'T00:00:00Z');
    if (isNaN(date.getTime())) return;
    element.textContent = dayFormat.format(date);
  });

  // A file input that fills a text area (the API credential set), when the browser can read files.
  document.querySelectorAll('input[type="file"][data-fill]').forEach(function (input) {
    var wrapper = input.closest('.file-loader');
    if (wrapper) wrapper.hidden = false;
    input.addEventListener('change', function () {
      var file = input.files && input.files[0];
      var target = document.getElementById(input.getAttribute('data-fill'));
      if (!file || !target) return;
      file.text().then(function (text) {
        target.value = text;
        target.focus();
      });
    });
  });

  // A form sent back with problems: the first field to change has the focus (the summary above it is announced).
  var invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid && !document.querySelector('[autofocus]')) invalid.focus();

  // A secret shown once: selected whole when focused, to copy it.
  document.querySelectorAll('input.secret').forEach(function (input) {
    input.addEventListener('focus', function () {
      input.select();
    });
  });
})();
