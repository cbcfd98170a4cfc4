"""Render :class:`~discoverygym.report.collect.RunData` as one self-contained HTML file.

The file needs no server and no network: plotly.js (from the ``plotly`` Python package,
``plotly.offline.get_plotlyjs()``) is inlined, the run's data is one JSON ``<script>`` block, and
the best construction's picture is an inline PNG. Drawing is plotly's: the curves are ``scatter``
traces, the lineage DAG ``scattergl`` (WebGL) traces, one for all parent→child edges as a single
line with gaps, one per node class (valid, coloured by reward; invalid / unscored; evicted from a train
run's archive, as open circles on the same colour scale, or open grey diamonds when the state was
invalid or its score was not recorded), so 10,000 nodes stay responsive with plotly's own zoom and pan.
Clicking a node fills the side panel (score, error, stdout tail, parents, the parent→child diff
computed at report time); the diff's coloured lines are built only on click.

The page records every uncaught error, unhandled promise rejection and ``console.error`` call in
``<pre id="report-errors">`` and ``<body data-errors>``, and once every plot is drawn sets
``<body data-ready="dag=N;curves=M">`` and a ``document.title`` ending in ``[ready]``: a headless
browser's ``--dump-dom`` shows both (the report test reads them).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
import math
from typing import Any

from discoverygym.io import script_json
from discoverygym.report.collect import DIFF_BUDGET, EVICTED, Node, RunData, unified_diff

__all__ = ["is_evicted", "layout", "picture_png", "render_html"]


def is_evicted(node: Node) -> bool:
    """Whether ``node`` is a state a train run's archive evicted (its cap), as
    :mod:`~discoverygym.report.collect` marks it: the note :data:`~discoverygym.report.collect.EVICTED`
    in its tail (judged score recorded) or at the start of its error (score not recorded)."""
    return node.tail == EVICTED or (node.error or "").startswith(EVICTED)


def layout(nodes: list[Node]) -> tuple[list[float], list[float], list[int]]:
    """``(x, y, parent index)`` of every node.

    Search-like runs (every node has a lane and a step): x = step + 1 (initial states at 0), y = the
    trajectory's band plus the candidate index, so each trajectory is a horizontal band. Otherwise
    x = the step when known, else the depth along first parents, and y = the rank within the column,
    ordered by the parent's y (children sit near their parents). Parent index ``-1``: no parent in
    the report.
    """
    index = {n.id: i for i, n in enumerate(nodes)}
    parent = [index.get(n.parents[0], -1) if n.parents else -1 for n in nodes]
    if nodes and all(n.lane is not None and n.step is not None for n in nodes):
        band = max(n.k for n in nodes) + 2
        return [float(n.step + 1) for n in nodes], [float(n.lane * band + n.k) for n in nodes], parent
    depth = [-1] * len(nodes)
    for i in range(len(nodes)):  # iterative depth along first parents (cycles cut)
        chain, j = [], i
        while j >= 0 and depth[j] < 0 and j not in chain:
            chain.append(j)
            j = parent[j]
        d = depth[j] if j >= 0 and depth[j] >= 0 else -1
        for c in reversed(chain):
            d += 1
            depth[c] = d
    xs = [float(n.step + 1) if n.step is not None else float(depth[i]) for i, n in enumerate(nodes)]
    ys = [0.0] * len(nodes)
    columns: dict[float, list[int]] = {}
    for i, x in enumerate(xs):
        columns.setdefault(x, []).append(i)
    for x in sorted(columns):
        col = sorted(columns[x], key=lambda i: (ys[parent[i]] if parent[i] >= 0 and xs[parent[i]] < x else -1, i))
        for rank, i in enumerate(col):
            ys[i] = float(rank)
    return xs, ys, parent


def picture_png(env_id: str | None, state: dict | None, env_kwargs: dict | None = None, size: int = 300) -> str | None:
    """The env's ``picture(state)`` of a state record as a base64 PNG, or ``None`` when it cannot be made."""
    if not env_id or not isinstance(state, dict) or not state.get("valid"):
        return None
    try:
        import gymnasium as gym
        from PIL import Image

        import discoverygym.envs  # noqa: F401 - registers the env ids
        from discoverygym.types import State

        try:
            env = gym.make(env_id, **(env_kwargs or {})).unwrapped
        except TypeError:
            env = gym.make(env_id).unwrapped
        full = {"solution": None, "score": None, "reward": 0.0, "valid": True, "code": None, "id": "best",
                "parent_ids": [], "error": None, "metadata": {}, **state}
        pixels = env.picture(State.from_dict(full), size)
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="PNG")
        return base64.b64encode(buf.getvalue()).decode("ascii")
    except Exception:  # noqa: BLE001 - a picture is a bonus; the report says it is missing
        return None


def _clean(x: Any) -> Any:
    """JSON-safe copy: non-finite floats become ``None``."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _payload(data: RunData) -> dict:
    """The JSON the page draws from: columnar node arrays, sparse texts, curves, best id."""
    nodes = data.nodes
    xs, ys, parent = layout(nodes)
    errors: dict[str, int] = {}
    err_idx, diffs, tails = [], {}, {}
    budget = DIFF_BUDGET
    for i, n in enumerate(nodes):
        err_idx.append(errors.setdefault(n.error, len(errors)) if n.error else -1)
        if n.tail:
            tails[i] = n.tail
        p = parent[i]
        if p >= 0:
            if budget > 0:
                d = unified_diff(nodes[p].text, n.text)
                if d is not None:
                    diffs[i] = d
                    budget -= len(d)
            else:
                diffs[i] = "(diff left out: the report's diff budget is spent)"
    best_id = data.best.get("id") if data.best else None
    if best_id is not None and data.kind == "post-train":
        best_id = str(best_id)
    return _clean({
        "kind": data.kind,
        "ids": [n.id for n in nodes], "x": xs, "y": ys, "p": parent,
        "s": [n.score for n in nodes], "r": [n.reward for n in nodes], "v": [1 if n.valid else 0 for n in nodes],
        "ev": [1 if is_evicted(n) else 0 for n in nodes],
        "lane": [n.lane for n in nodes], "step": [n.step for n in nodes], "k": [n.k for n in nodes],
        "np": [len(n.parents) for n in nodes], "par": [n.parents[:6] for n in nodes],
        "err": err_idx, "errs": list(errors), "tails": tails, "diffs": diffs,
        "curves": data.curves, "best": best_id,
    })


def _table(columns: list[str], rows: list[list[Any]]) -> str:
    """An HTML table (cells escaped; floats to 12 significant digits: a record such as CP26's
    2.6359830853 keeps its printed digits, and a best just below it reads differently)."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.12g}"
        return "" if v is None else html.escape(str(v))

    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _flatten(obj: Any, prefix: str = "", depth: int = 0) -> list[list[Any]]:
    """``[[dotted key, value]]`` of a nested dict (3 levels; deeper values as JSON)."""
    if isinstance(obj, dict) and depth < 3:
        rows = []
        for k, v in obj.items():
            rows += _flatten(v, f"{prefix}.{k}" if prefix else str(k), depth + 1)
        return rows
    return [[prefix or "value", obj if isinstance(obj, (int, float, str, type(None))) else json.dumps(obj)]]


def render_html(data: RunData, plotly_js: str, picture_b64: str | None = None, refresh_s: float | None = None) -> str:
    """The report page of ``data``; ``refresh_s`` adds a ``<meta http-equiv="refresh">`` (live runs)."""
    payload = script_json(_payload(data))
    title = f"discoverygym {data.kind} report — {data.env_id or data.run_dir.name}"
    summary = _table(["", ""], [[k, v] for k, v in data.summary.items()])
    picture = (f'<img alt="best construction" src="data:image/png;base64,{picture_b64}">' if picture_b64
               else "<p class=muted>no picture (no valid best state, or the env could not draw it here)</p>")
    if data.usage is not None:
        usage = _table(["key", "value"], _flatten(data.usage))
    else:
        usage = "<p class=muted>no usage.json in the run directory (no chat-backend token or cost totals)</p>"
    tables = "".join(f"<h2>{html.escape(t['title'])}</h2>{_table(t['columns'], t['rows'])}" for t in data.tables)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in data.notes)
    best_text = html.escape(data.best_text) if data.best_text else ""
    refresh = f'<meta http-equiv="refresh" content="{max(1, int(refresh_s))}">' if refresh_s else ""
    generated = _dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    config = html.escape(json.dumps(_clean(data.config), indent=1, allow_nan=False, default=str))
    return _TEMPLATE.format(
        title=html.escape(title), refresh=refresh, generated=generated, run_dir=html.escape(str(data.run_dir)),
        summary=summary, picture=picture, usage=usage, tables=tables, config=config,
        notes=f"<h2>notes</h2><ul>{notes}</ul>" if notes else "", best_text=best_text,
        live=f" · refreshes every {int(refresh_s)} s" if refresh_s else "",
        plotly_js=plotly_js.replace("</script", "<\\/script"), payload=payload, hooks=_HOOKS, script=_SCRIPT,
    )


_HOOKS = """
window.__reportErrors = [];
function __noteError(msg) {
  window.__reportErrors.push(String(msg));
  document.addEventListener('DOMContentLoaded', __showErrors);
  if (document.body) __showErrors();
}
function __showErrors() {
  var el = document.getElementById('report-errors');
  if (!el) return;
  el.textContent = window.__reportErrors.join('\\n');
  el.style.display = window.__reportErrors.length ? 'block' : 'none';
  document.body.setAttribute('data-errors', String(window.__reportErrors.length));
}
window.addEventListener('error', function (e) { __noteError('Uncaught ' + (e.message || e)); });
window.addEventListener('unhandledrejection', function (e) {
  __noteError('Unhandled rejection ' + ((e.reason && e.reason.message) || e.reason));
});
(function () {
  var original = console.error;
  console.error = function () {
    __noteError('console.error ' + Array.prototype.slice.call(arguments).join(' '));
    return original.apply(console, arguments);
  };
})();
"""

_SCRIPT = r"""
(function () {
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var n = D.ids.length;
  function fmt(v) { return v === null || v === undefined ? '—' : (typeof v === 'number' ? v.toPrecision(10) : String(v)); }
  var plots = [];
  var axes = {evaluations: ['curve-evals', 'evaluations'], wall: ['curve-wall', 'wall time (s)'],
              round: ['curve-rounds', 'round']};
  var ncurves = 0;
  Object.keys(axes).forEach(function (axis) {
    var cs = D.curves.filter(function (c) { return c.axis === axis && c.x.length; });
    var div = document.getElementById(axes[axis][0]);
    if (!cs.length) { div.style.display = 'none'; return; }
    ncurves += cs.length;
    var traces = cs.map(function (c, i) {
      var all = /all trajectories$/.test(c.name) || axis !== 'wall' && cs.length === 1;
      return {type: 'scatter', mode: c.x.length > 300 ? 'lines' : 'lines+markers', name: c.name, x: c.x, y: c.y,
              line: {shape: axis === 'round' ? 'linear' : 'hv', width: all ? 3 : 1.3},
              marker: {size: all ? 6 : 4}, opacity: all ? 1 : 0.8};
    });
    var xlabel = (cs[0].xlabel || axes[axis][1]);
    plots.push(Plotly.newPlot(div, traces, {
      title: {text: cs[0].ylabel + ' against ' + xlabel}, margin: {l: 60, r: 10, t: 40, b: 45},
      xaxis: {title: {text: xlabel}}, yaxis: {title: {text: cs[0].ylabel}}, legend: {font: {size: 10}},
      showlegend: cs.length <= 24
    }, {responsive: true, displaylogo: false}));
  });

  // ---- DAG: edges (one line trace with gaps), valid nodes coloured by reward, invalid ones red, evicted ones
  // open (valid: on the same reward scale; invalid / not recorded: grey), best, lineage
  var ex = [], ey = [];
  for (var i = 0; i < n; i++) {
    var p = D.p[i];
    if (p >= 0) { ex.push(D.x[p], D.x[i], null); ey.push(D.y[p], D.y[i], null); }
  }
  function cls() { return {x: [], y: [], c: [], t: [], i: []}; }
  var good = cls(), bad = cls(), gone = cls(), goneBad = cls();
  var cmin = Infinity, cmax = -Infinity;
  for (var j = 0; j < n; j++) {
    var ok = D.v[j] && D.r[j] !== null, ev = D.ev && D.ev[j];
    var label = D.ids[j] + '<br>score ' + fmt(D.s[j]) + (D.v[j] ? '' : ' (invalid)') + (ev ? ' (evicted)' : '');
    var to = ev ? (ok ? gone : goneBad) : (ok ? good : bad);
    to.x.push(D.x[j]); to.y.push(D.y[j]); to.t.push(label); to.i.push(j);
    if (ok) { to.c.push(D.r[j]); cmin = Math.min(cmin, D.r[j]); cmax = Math.max(cmax, D.r[j]); }
  }
  var scale = cmin <= cmax ? {cmin: cmin, cmax: cmax} : {};
  var bi = D.best === null ? -1 : D.ids.indexOf(D.best);
  var traces = [
    {type: 'scattergl', mode: 'lines', x: ex, y: ey, hoverinfo: 'skip', name: 'parent → child',
     line: {color: 'rgba(120,120,140,0.35)', width: 1}},
    {type: 'scattergl', mode: 'markers', x: good.x, y: good.y, text: good.t, customdata: good.i, hoverinfo: 'text',
     name: 'valid', marker: Object.assign({size: 6, color: good.c, colorscale: 'Viridis', showscale: true,
                             colorbar: {title: {text: 'reward'}, thickness: 12}}, scale)},
    {type: 'scattergl', mode: 'markers', x: bad.x, y: bad.y, text: bad.t, customdata: bad.i, hoverinfo: 'text',
     name: 'invalid / unscored', marker: {size: 5, color: '#d62728', symbol: 'x', opacity: 0.6}},
    {type: 'scattergl', mode: 'markers', x: gone.x, y: gone.y, text: gone.t, customdata: gone.i, hoverinfo: 'text',
     name: 'evicted (valid, judged score)', showlegend: gone.i.length > 0,
     marker: Object.assign({size: 7, color: gone.c, colorscale: 'Viridis', symbol: 'circle-open', line: {width: 1.5}},
                           scale)},
    {type: 'scattergl', mode: 'markers', x: goneBad.x, y: goneBad.y, text: goneBad.t, customdata: goneBad.i,
     hoverinfo: 'text', name: 'evicted (invalid or score not recorded)', showlegend: goneBad.i.length > 0,
     marker: {size: 7, color: '#7f7f7f', symbol: 'diamond-open', line: {width: 1.5}}},
    {type: 'scattergl', mode: 'markers', x: bi >= 0 ? [D.x[bi]] : [], y: bi >= 0 ? [D.y[bi]] : [],
     customdata: bi >= 0 ? [bi] : [], text: bi >= 0 ? ['best: ' + D.ids[bi]] : [], hoverinfo: 'text', name: 'best',
     marker: {size: 16, color: '#ff7f0e', symbol: 'star', line: {color: 'black', width: 1}}},
    {type: 'scattergl', mode: 'lines+markers', x: [], y: [], hoverinfo: 'skip', name: 'lineage of the selection',
     line: {color: '#ff7f0e', width: 3}, marker: {size: 8, color: '#ff7f0e'}}
  ];
  var dag = document.getElementById('dag');
  var xl = D.kind === 'train' ? 'step (or depth)' : 'step (0 = initial state)';
  plots.push(Plotly.newPlot(dag, traces, {
    title: {text: 'lineage DAG: ' + n + ' states · click a node · drag: zoom, scroll: zoom, toolbar: pan', x: 0.01, xanchor: 'left', font: {size: 13}},
    margin: {l: 60, r: 10, t: 40, b: 45}, hovermode: 'closest', dragmode: 'zoom',
    xaxis: {title: {text: xl}}, yaxis: {title: {text: D.kind === 'train' ? 'rank' : 'trajectory band · candidate'},
                                         autorange: 'reversed'},
    legend: {orientation: 'h', y: -0.12}
  }, {responsive: true, displaylogo: false, scrollZoom: true}));

  function show(i) {
    var panel = document.getElementById('panel');
    panel.innerHTML = '';
    function row(k, v, cls) {
      var d = document.createElement('div'); d.className = 'kv ' + (cls || '');
      var b = document.createElement('b'); b.textContent = k + ': '; d.appendChild(b);
      d.appendChild(document.createTextNode(v)); panel.appendChild(d);
    }
    function pre(title, text, diff) {
      var h = document.createElement('h3'); h.textContent = title; panel.appendChild(h);
      var el = document.createElement('pre'); el.className = diff ? 'diff' : '';
      if (diff) {
        text.split('\n').forEach(function (line) {
          var s = document.createElement('span');
          var c = line[0];
          s.className = line.indexOf('@@') === 0 ? 'hunk' : (c === '+' && line.indexOf('+++') !== 0 ? 'add'
                        : (c === '-' && line.indexOf('---') !== 0 ? 'del' : ''));
          s.textContent = line + '\n'; el.appendChild(s);
        });
      } else { el.textContent = text; }
      panel.appendChild(el);
    }
    row('id', D.ids[i]);
    if (D.lane[i] !== null) row('trajectory band', D.lane[i]);
    if (D.step[i] !== null) row('step · candidate', D.step[i] + ' · ' + D.k[i]);
    row('score', fmt(D.s[i])); row('reward', fmt(D.r[i]));
    row('valid', D.v[i] ? 'yes' : 'no', D.v[i] ? '' : 'bad');
    if (D.ev && D.ev[i]) row('archive', 'evicted (kept no longer; score as judged when it was made)');
    row('parents', D.np[i] ? D.par[i].join(', ') + (D.np[i] > D.par[i].length ? ' …' : '') + '  (first: the parent)' : 'none');
    if (D.err[i] >= 0) pre('error', D.errs[D.err[i]], false);
    if (D.tails[i]) pre('stdout / stderr tail', D.tails[i], false);
    if (D.diffs[i]) pre('diff parent → child', D.diffs[i], true);
    var lx = [], ly = [], seen = {};
    for (var j = i; j >= 0 && !seen[j]; j = D.p[j]) { seen[j] = 1; lx.push(D.x[j]); ly.push(D.y[j]); }
    Plotly.restyle(dag, {x: [lx], y: [ly]}, [traces.length - 1]);
  }
  dag.on('plotly_click', function (ev) {
    var pt = ev.points && ev.points[0];
    if (pt && pt.customdata !== undefined && pt.customdata !== null) show(pt.customdata);
  });
  Promise.all(plots).then(function () {
    if (bi >= 0) show(bi);
    document.body.setAttribute('data-ready', 'dag=' + n + ';curves=' + ncurves);
    document.body.setAttribute('data-errors', String(window.__reportErrors.length));
    document.title = document.title + ' [ready]';
  });
})();
"""

_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{refresh}
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 0 1.2em; color: #222; }}
h1 {{ font-size: 1.35em; margin: .5em 0 .1em; }} h2 {{ font-size: 1.1em; margin: 1em 0 .3em; }}
h3 {{ font-size: .95em; margin: .6em 0 .2em; }}
.muted {{ color: #777; }} .bad {{ color: #c00; }}
.row {{ display: flex; gap: 1em; align-items: flex-start; }}
.curves {{ display: flex; gap: 1em; }} .curves > div {{ flex: 1; height: 330px; min-width: 0; }}
#dag {{ flex: 1; height: 640px; min-width: 0; }}
#panel {{ width: 430px; height: 640px; overflow: auto; border: 1px solid #ddd; padding: .4em .6em; font-size: .85em; }}
pre {{ background: #f6f6f8; padding: .4em; overflow: auto; max-height: 22em; font-size: .8em; white-space: pre-wrap; }}
pre.diff .add {{ color: #070; background: #eaffea; }} pre.diff .del {{ color: #a00; background: #ffecec; }}
pre.diff .hunk {{ color: #05a; }}
table {{ border-collapse: collapse; font-size: .85em; }} td, th {{ border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }} td {{ white-space: pre-wrap; overflow-wrap: anywhere; max-width: 70em; }}
#report-errors {{ display: none; color: #c00; background: #fff0f0; }}
.side {{ display: flex; gap: 2em; flex-wrap: wrap; }}
</style>
<script>{hooks}</script>
<script>{plotly_js}</script>
</head><body>
<h1>{title}</h1>
<div class="muted">{run_dir} · generated {generated}{live}</div>
<pre id="report-errors"></pre>
<div class="side"><div><h2>summary</h2>{summary}</div>
<div><h2>best construction</h2>{picture}</div>
<div><h2>tokens and cost</h2>{usage}</div></div>
<h2>curves</h2>
<div class="curves"><div id="curve-evals"></div><div id="curve-wall"></div><div id="curve-rounds"></div></div>
<h2>lineage</h2>
<div class="row"><div id="dag"></div><div id="panel" class="muted">click a node</div></div>
{tables}
<h2>best program / construction</h2><pre>{best_text}</pre>
<h2>config</h2><pre>{config}</pre>
{notes}
<script type="application/json" id="report-data">{payload}</script>
<script>{script}</script>
</body></html>
"""
