#include "reports/html_assets.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "reports/html.h"

namespace autotune {

std::string read_chartjs(std::string& why_missing) {
  const std::string path = chartjs_path();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why_missing = fmt::format("Chart.js was not found at {} (Debian package libjs-chart.js, or set AUTOTUNE_CHARTJS)", path);
    return "";
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string js = ss.str();
  // An inline script ends at the first "</script"; Chart.js has none, but never trust a file.
  for (size_t p = 0; (p = js.find("</", p)) != std::string::npos; p += 3) js.replace(p, 2, "<\\/");
  return js;
}

const char* const kReportStyle = R"css(
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e;--bg2:#f6f8fa}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);max-width:1100px;margin:24px auto;padding:0 16px}
h1{font-size:1.6em;margin-bottom:0}h2{border-bottom:1px solid var(--line);padding-bottom:4px;margin-top:32px}
.sub{color:var(--muted)}.big{font-size:1.25em}
table{border-collapse:collapse;width:100%;margin:8px 0 16px;font-size:.9em}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--bg2)}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{background:var(--bg2);padding:1px 4px;border-radius:4px;font-size:.92em;word-break:break-word}
pre{background:var(--bg2);padding:10px;border-radius:6px;overflow:auto}
.pass{color:var(--ok);font-weight:600}.fail{color:var(--bad);font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(230px,1fr));gap:12px;margin:16px 0}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 14px}.card .v{font-size:1.4em;font-weight:600}
.chart{position:relative;height:320px;margin:8px 0 24px}.note{color:var(--muted);font-size:.9em}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px}
)css";

/// The pages' scripts share a frame: read the data block, draw each chart with animation off, then record on
/// each canvas how many pixels it painted (data-painted) and on the body how many canvases drew — what the
/// browser test reads.
const char* const kChartPrologue = R"js(
(function(){
  var data = JSON.parse(document.getElementById('autotune-data').textContent);
  var status = document.getElementById('chart-status');
  if (typeof Chart === 'undefined') { document.body.setAttribute('data-charts', 'unavailable'); return; }
  var colors = {baseline:'#8c959f', search:'#0969da', remeasure:'#54aeff', reference:'#8250df', confirm:'#1a7f37', ablation:'#bc4c00', effect:'#9a6700'};
  var phaseColors = ['#8c959f','#bf8700','#0969da','#8250df','#1a7f37','#cf222e'];
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  function painted(canvas) {
    var ctx = canvas.getContext('2d'), w = canvas.width, h = canvas.height, n = 0;
    var px = ctx.getImageData(0, 0, w, h).data;
    for (var i = 3; i < px.length; i += 4) if (px[i] !== 0) n++;
    return n;
  }
  function draw(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas) return;
    try {
      var chart = new Chart(canvas, config);
      chart.draw();
      canvas.setAttribute('data-painted', String(painted(canvas)));
    } catch (e) {
      canvas.setAttribute('data-error', String(e));
    }
  }
)js";
const char* const kChartEpilogue = R"js(  var canvases = document.querySelectorAll('canvas');
  var ok = 0;
  for (var i = 0; i < canvases.length; i++) if (Number(canvases[i].getAttribute('data-painted')) > 0) ok++;
  document.body.setAttribute('data-charts', ok + '/' + canvases.length);
  if (status) status.textContent = '';
})();
)js";

/// report.html's charts.
const char* const kReportCharts = R"js(
  // 1. throughput per trial
  draw('chart-trials', {type:'bar', data:{labels:data.trials.map(function(t){return '#'+t.id;}),
    datasets:[{label:'samples/s (median of windows)', data:data.trials.map(function(t){return t.median;}),
      backgroundColor:data.trials.map(function(t){return t.status==='ok' ? colors[t.kind] : '#cf222e';})}]},
    options:{plugins:{legend:{display:false}, tooltip:{callbacks:{afterLabel:function(c){var t=data.trials[c.dataIndex];
      return t.kind+': '+t.config+(t.status==='ok'?'':' — '+t.status+': '+t.message);}}}},
      scales:{y:{title:{display:true,text:'samples/s'}}, x:{title:{display:true,text:'trial (completion order)'}}}}});
  // 2. knob effects
  var eff = data.effects.filter(function(e){return e.ratio > 0;});
  draw('chart-effects', {type:'bar', data:{labels:eff.map(function(e){return e.knob+'='+e.winner_value+' (vs '+e.without_value+')';}),
    datasets:[{label:'winner ÷ winner without this knob', data:eff.map(function(e){return e.ratio;}),
      backgroundColor:eff.map(function(e){return e.lo > 1 ? '#1a7f37' : (e.hi < 1 ? '#cf222e' : '#8c959f');})}]},
    options:{indexAxis:'y', plugins:{legend:{display:false}, tooltip:{callbacks:{afterLabel:function(c){var e=eff[c.dataIndex];
      return '95% CI '+e.lo.toFixed(2)+'–'+e.hi.toFixed(2)+'×';}}}},
      scales:{x:{title:{display:true,text:'speedup from this knob (×)'}}}}});
  // 3. time per 1,000 samples, stacked by phase
  draw('chart-breakdown', {type:'bar', data:{labels:data.breakdown.labels,
    datasets:data.breakdown.phases.map(function(p, i){return {label:p, data:data.breakdown.values.map(function(v){return v[i];}),
      backgroundColor:phaseColors[i % phaseColors.length]};})},
    options:{indexAxis:'y', scales:{x:{stacked:true, title:{display:true,text:'ms per 1,000 samples'}}, y:{stacked:true}}}});
  // 4. peak memory vs batch size
  draw('chart-memory', {type:'scatter', data:{datasets:[
    {label:'stable', data:data.memory.filter(function(m){return m.eligible;}), backgroundColor:'#1a7f37'},
    {label:'rejected', data:data.memory.filter(function(m){return !m.eligible;}), backgroundColor:'#cf222e'}]},
    options:{parsing:{xAxisKey:'batch', yAxisKey:'mib'}, plugins:{tooltip:{callbacks:{label:function(c){return c.raw.config+': '+c.raw.mib.toFixed(0)+' MiB';}}}},
      scales:{x:{type:'logarithmic', title:{display:true,text:'batch size'}}, y:{title:{display:true,text:'peak memory (MiB)'}}}}});
  // 5. loss curves
  var lineColors = ['#0969da', '#8250df', '#8c959f'];
  draw('chart-loss', {type:'line', data:{datasets:data.losses.map(function(c, i){return {label:c.label,
      data:c.losses.map(function(y, j){return {x:j*c.stride+1, y:y};}), borderColor:lineColors[i % 3], backgroundColor:lineColors[i % 3],
      pointRadius:0, borderWidth:1.5, spanGaps:false};})},
    options:{scales:{x:{type:'linear', title:{display:true,text:'step (warm-up included)'}}, y:{title:{display:true,text:'loss'}}}}});
  // 6. the noise scale along the run: windows, the fitted growth, B̄ over the run; and against the loss
  if (data.noise) {
    var nw = data.noise.windows;
    var tip = {callbacks:{label:function(c){var w=c.raw; return w.lo !== undefined ?
      'B '+w.y.toFixed(0)+' [95% '+w.lo.toFixed(0)+'–'+(w.hi === null ? '∞' : w.hi.toFixed(0))+'], loss '+w.loss.toFixed(3) :
      c.dataset.label+': '+w.y.toFixed(0);}}};
    var sets = [{label:'window', type:'scatter', data:nw, backgroundColor:'#0969da', pointRadius:4},
                {label:'fitted growth', type:'line', data:data.noise.fit, borderColor:'#8250df', pointRadius:0, borderWidth:1.5}];
    if (data.noise.run_mean > 0 && data.noise.fit.length)
      sets.push({label:'B̄ over the run', type:'line', borderDash:[5, 4], borderColor:'#bc4c00', pointRadius:0, borderWidth:1.5,
        data:[{x:data.noise.fit[0].x, y:data.noise.run_mean}, {x:data.noise.fit[data.noise.fit.length - 1].x, y:data.noise.run_mean}]});
    draw('chart-noise-samples', {type:'scatter', data:{datasets:sets}, options:{plugins:{tooltip:tip},
      scales:{x:{type:'logarithmic', title:{display:true,text:'samples since the first step of training'}},
              y:{type:'logarithmic', title:{display:true,text:'B_simple (samples)'}}}}});
    draw('chart-noise-loss', {type:'scatter', data:{datasets:[
        {label:'window', data:nw.map(function(w){return {x:w.loss, y:w.y, lo:w.lo, hi:w.hi, loss:w.loss};}), backgroundColor:'#0969da', pointRadius:4},
        {label:'fitted', type:'line', data:data.noise.loss_fit, borderColor:'#8250df', pointRadius:0, borderWidth:1.5}]},
      options:{plugins:{tooltip:tip}, scales:{x:{type:'logarithmic', reverse:true, title:{display:true,text:'training loss (falling →)'}},
              y:{type:'logarithmic', title:{display:true,text:'B_simple (samples)'}}}}});
  }
)js";

/// converge.html's charts: the smoothed loss of every run against wall time and against samples.
const char* const kConvergeCharts = R"js(
  var runColors = ['#0969da','#1a7f37','#bc4c00','#8250df','#8c959f','#bf8700','#cf222e'];
  function lines(xi, title) {
    return {type:'line', data:{datasets:data.runs.map(function(r, i){return {label:r.label,
        data:r.points.map(function(p){return {x:p[xi], y:p[2]};}), borderColor:runColors[i % runColors.length],
        backgroundColor:runColors[i % runColors.length], pointRadius:0, borderWidth:1.5, spanGaps:false,
        borderDash: r.role.indexOf('rerun') >= 0 ? [4, 3] : []};})},
      options:{scales:{x:{type:'linear', title:{display:true,text:title}}, y:{title:{display:true,text:'training loss (smoothed)'}}}}};
  }
  draw('chart-loss-time', lines(1, 'wall seconds'));
  draw('chart-loss-samples', lines(0, 'samples'));
)js";

std::string report_script() { return std::string(kChartPrologue) + kReportCharts + kChartEpilogue; }
std::string converge_script() { return std::string(kChartPrologue) + kConvergeCharts + kChartEpilogue; }

}  // namespace autotune
