// Reload the page every data-refresh seconds, unless someone is typing in
// a form: a field has the focus, or holds something else than the page was
// loaded with. Then try again a little later, so nothing typed is lost. A
// field filled by the page itself (a filtered page's search box) is not
// typing: the page reloads as the others do.
(function () {
  var every = Number(document.body.dataset.refresh) * 1000;
  if (!every) return;
  var fields = document.querySelectorAll("main input:not([type=hidden]), header input:not([type=hidden]), main select, main textarea");
  var loaded = [];
  for (var i = 0; i < fields.length; i++) loaded.push(fields[i].value);
  function busy() {
    for (var i = 0; i < fields.length; i++) {
      if (fields[i] === document.activeElement || fields[i].value !== loaded[i]) return true;
    }
    return false;
  }
  function tick() {
    if (busy()) { setTimeout(tick, every); return; }
    location.reload();
  }
  setTimeout(tick, every);
})();
