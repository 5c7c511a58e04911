/* inferlint report: theme switch, chart crosshair and tooltips. The page reads fully without it. */
(function () {
  'use strict';
  var doc = document, root = doc.documentElement;
  var KEY = 'inferlint-theme';

  function currentTheme() {
    var t = root.getAttribute('data-theme');
    if (t === 'dark' || t === 'light') return t;
    return window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }
  function labelToggle(btn) {
    var dark = currentTheme() === 'dark';
    btn.setAttribute('aria-pressed', dark ? 'true' : 'false');
    var label = btn.querySelector('.label');
    if (label) label.textContent = dark ? 'Light' : 'Dark';
    btn.title = dark ? 'Switch to the light theme' : 'Switch to the dark theme';
  }
  var toggle = doc.getElementById('theme-toggle');
  if (toggle) {
    toggle.hidden = false;
    labelToggle(toggle);
    toggle.addEventListener('click', function () {
      var next = currentTheme() === 'dark' ? 'light' : 'dark';
      root.setAttribute('data-theme', next);
      try { localStorage.setItem(KEY, next); } catch (e) { /* storage may be off */ }
      labelToggle(toggle);
    });
  }

  var tip = doc.querySelector('.tt');
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function showTip(html, x, y) {
    if (!tip) return;
    tip.innerHTML = html;
    tip.hidden = false;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var left = Math.min(x + 14, window.innerWidth - w - 8);
    var top = y - h - 12;
    if (top < 8) top = y + 16;
    tip.style.left = Math.max(8, left) + 'px';
    tip.style.top = top + 'px';
  }
  function hideTip() { if (tip) tip.hidden = true; }

  function fmt(v) {
    if (v === null || v === undefined) return '\u2013';
    if (Array.isArray(v)) return fmt(v[0]) + '\u2013' + fmt(v[1]);
    var a = Math.abs(v);
    var d = a >= 100 ? 0 : a >= 10 ? 1 : 2;
    return Number(v.toFixed(d)).toLocaleString('en-US');
  }

  var NS = 'http://www.w3.org/2000/svg';
  function setupChart(fig) {
    var svg = fig.querySelector('svg.plot');
    var script = fig.querySelector('script.chart-data');
    if (!svg || !script) return;
    var data;
    try { data = JSON.parse(script.textContent); } catch (e) { return; }
    var n = data.t.length;
    if (!n) return;
    var top = Number(svg.getAttribute('data-top')), bottom = Number(svg.getAttribute('data-bottom'));
    var xh = doc.createElementNS(NS, 'line');
    xh.setAttribute('class', 'xh');
    xh.setAttribute('y1', top); xh.setAttribute('y2', bottom);
    xh.style.display = 'none';
    svg.appendChild(xh);
    var index = -1;
    var words = data.event_words || ['event', 'events'];

    function nearest(px) {
      var lo = 0, hi = n - 1;
      while (hi - lo > 1) {
        var mid = (lo + hi) >> 1;
        if (data.px[mid] < px) lo = mid; else hi = mid;
      }
      return Math.abs(data.px[lo] - px) <= Math.abs(data.px[hi] - px) ? lo : hi;
    }
    function eventsAt(i) {
      var from = i > 0 ? data.t[i - 1] : -Infinity, to = data.t1 ? data.t1[i] : data.t[i], sum = 0;
      for (var k = 0; k < data.events.length; k++) {
        var e = data.events[k];
        if (data.thinned ? e[1] === data.px[i] : (e[0] > from && e[0] <= to)) sum += e[2];
      }
      return sum;
    }
    function show(i, clientX, clientY) {
      index = Math.max(0, Math.min(n - 1, i));
      svg.setAttribute('data-index', String(index));
      var x = data.px[index];
      xh.setAttribute('x1', x); xh.setAttribute('x2', x);
      xh.style.display = '';
      var t = data.t[index], html = '<b>' + t.toFixed(2) + ' s';
      if (data.t1 && data.t1[index] !== t) html += '\u2013' + data.t1[index].toFixed(2) + ' s';
      html += '</b>';
      for (var s = 0; s < data.series.length; s++) {
        var ser = data.series[s];
        html += '<br><span class="sw ' + esc(ser.class || ('s' + (s + 1))) + '"></span>' + esc(ser.name) + ': ' + esc(fmt(ser.values[index]));
      }
      var ev = eventsAt(index);
      if (ev > 0) html += '<br><span class="evt">' + ev + ' ' + esc(ev === 1 ? words[0] : words[1]) + '</span>';
      if (data.thinned) html += '<br><small>lowest\u2013highest of the readings in this column</small>';
      if (clientX === undefined) {
        var ctm = svg.getScreenCTM();
        if (ctm) {
          var pt = svg.createSVGPoint(); pt.x = x; pt.y = top;
          var sp = pt.matrixTransform(ctm); clientX = sp.x; clientY = sp.y + 30;
        } else { clientX = 0; clientY = 0; }
      }
      showTip(html, clientX, clientY);
    }
    function hide() { xh.style.display = 'none'; hideTip(); }
    svg.addEventListener('mousemove', function (ev) {
      var ctm = svg.getScreenCTM();
      if (!ctm) return;
      var pt = svg.createSVGPoint(); pt.x = ev.clientX; pt.y = ev.clientY;
      var p = pt.matrixTransform(ctm.inverse());
      show(nearest(p.x), ev.clientX, ev.clientY);
    });
    svg.addEventListener('mouseleave', hide);
    svg.addEventListener('focus', function () { show(index < 0 ? 0 : index); });
    svg.addEventListener('blur', hide);
    svg.addEventListener('keydown', function (ev) {
      var step = ev.shiftKey ? 10 : 1;
      if (ev.key === 'ArrowRight') { show((index < 0 ? 0 : index) + step); ev.preventDefault(); }
      else if (ev.key === 'ArrowLeft') { show((index < 0 ? 0 : index) - step); ev.preventDefault(); }
      else if (ev.key === 'Home') { show(0); ev.preventDefault(); }
      else if (ev.key === 'End') { show(n - 1); ev.preventDefault(); }
      else if (ev.key === 'Escape') { hide(); }
    });
  }
  var figs = doc.querySelectorAll('figure[data-chart]');
  for (var i = 0; i < figs.length; i++) setupChart(figs[i]);

  function barTip(ev) {
    var g = ev.currentTarget, r = g.getBoundingClientRect();
    var x = ev.clientX !== undefined && ev.type === 'mousemove' ? ev.clientX : r.left + r.width / 2;
    var y = ev.clientY !== undefined && ev.type === 'mousemove' ? ev.clientY : r.top;
    showTip(esc(g.getAttribute('data-tip')), x, y);
  }
  var bars = doc.querySelectorAll('svg.bars .bar');
  for (var b = 0; b < bars.length; b++) {
    bars[b].addEventListener('mousemove', barTip);
    bars[b].addEventListener('focus', barTip);
    bars[b].addEventListener('mouseleave', hideTip);
    bars[b].addEventListener('blur', hideTip);
  }

  // Printing shows every folded section.
  window.addEventListener('beforeprint', function () {
    var ds = doc.querySelectorAll('details');
    for (var k = 0; k < ds.length; k++) {
      if (!ds[k].open) { ds[k].open = true; ds[k].setAttribute('data-print-opened', ''); }
    }
  });
  window.addEventListener('afterprint', function () {
    var ds = doc.querySelectorAll('details[data-print-opened]');
    for (var k = 0; k < ds.length; k++) { ds[k].open = false; ds[k].removeAttribute('data-print-opened'); }
  });
})();
