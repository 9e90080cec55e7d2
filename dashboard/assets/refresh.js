// Reload the page every data-refresh seconds, unless someone is typing in
// a form: then try again a little later, so nothing typed is lost.
(function () {
  var every = Number(document.body.dataset.refresh) * 1000;
  if (!every) return;
  function busy() {
    var fields = document.querySelectorAll("main input:not([type=hidden]), header input:not([type=hidden])");
    for (var i = 0; i < fields.length; i++) {
      if (fields[i].value || fields[i] === document.activeElement) return true;
    }
    return false;
  }
  function tick() {
    if (busy()) { setTimeout(tick, every); return; }
    location.reload();
  }
  setTimeout(tick, every);
})();
