/* Draws each plot of the page (an empty div.lazy-plot; its figure, as
   plotly.io.to_json wrote it, in the script #<id>-spec) when it comes within
   a screen of the viewport: at load, then on scroll, resize and jumps to an
   anchor; every plot before printing. A family section far from the screen
   is not laid out (content-visibility), and not measured here either. */
(function () {
  var pending = Array.prototype.slice.call(document.querySelectorAll('div.lazy-plot'));
  function draw(div) {
    var spec = JSON.parse(document.getElementById(div.id + '-spec').textContent);
    Plotly.newPlot(div, spec.data, spec.layout, JSON.parse(div.getAttribute('data-config')));
  }
  function near(el) {
    var r = el.getBoundingClientRect(), h = window.innerHeight;
    return r.bottom > -h && r.top < 2 * h;
  }
  function drawNear() {
    pending = pending.filter(function (div) {
      var section = div.closest('section.family');
      if ((section && !near(section)) || !near(div)) return true;
      draw(div);
      return false;
    });
  }
  function drawAll() { pending.forEach(draw); pending = []; }
  var timer = null;
  function soon() {
    if (timer === null) timer = setTimeout(function () { timer = null; drawNear(); }, 50);
  }
  window.addEventListener('scroll', soon, {passive: true});
  window.addEventListener('resize', soon);
  window.addEventListener('hashchange', soon);
  window.addEventListener('beforeprint', drawAll);
  window.clusterproofDrawAll = drawAll;
  drawNear();
})();
