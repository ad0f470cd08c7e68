"""The HTML report's Jinja template: one self-contained page, inline CSS and SVG, no scripts.

Rendered with autoescaping on (see :mod:`pawl.demo.report`), so every value that
came from a user (group labels, scorer keys, ids) is escaped in text and attributes alike.
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
  :root { --ink: #1f2328; --muted: #656d76; --line: #d0d7de; --base: #8c959f;
          --cand: #0969da; --good: #1a7f37; --bad: #cf222e; --warn: #9a6700; }
  body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
         max-width: 980px; margin: 2rem auto; padding: 0 1rem; }
  p, li, code { overflow-wrap: anywhere; }
  h1 { font-size: 1.5rem; margin-bottom: .2rem; }
  h2 { font-size: 1.1rem; margin-top: 2rem; border-bottom: 1px solid var(--line); }
  .meta, .note { color: var(--muted); font-size: .9rem; }
  code { font-size: .85rem; }
  table { border-collapse: collapse; margin: .6rem 0; }
  th, td { padding: .3rem .7rem; border-bottom: 1px solid var(--line); text-align: right; }
  th:first-child, td:first-child { text-align: left; }
  th { font-weight: 600; background: #f6f8fa; }
  .verdict { padding: .8rem 1rem; border-radius: 6px; border: 1px solid; margin: 1rem 0; }
  .verdict.passed { border-color: var(--good); background: #dafbe1; }
  .verdict.failed { border-color: var(--bad); background: #ffebe9; }
  .verdict.none { border-color: var(--warn); background: #fff8c5; }
  .verdict strong { font-size: 1.1rem; }
  .verdict ul { margin: .4rem 0 0; padding-left: 1.2rem; }
  .up { color: var(--good); } .down { color: var(--bad); }
  /* Narrow screens: the plot scales down (viewBox), a wide table scrolls inside its box. */
  svg { display: block; max-width: 100%; height: auto; }
  .table-box { max-width: 100%; overflow-x: auto; }
  td { white-space: nowrap; }  /* a figure never splits; the box scrolls instead */
  @media (max-width: 500px) {
    body { font-size: 14px; margin: 1rem auto; padding: 0 .5rem; }
    th, td { padding: .25rem .4rem; }
  }
  svg text { font: 12px system-ui, sans-serif; fill: var(--ink); }
  svg .value { font-size: 10px; fill: var(--muted); }
  svg .axis-title { font-size: 12px; fill: var(--muted); }
  svg .grid { stroke: var(--line); stroke-width: 1; }
  svg .axis { stroke: var(--muted); stroke-width: 1; }
  svg .baseline { fill: var(--base); } svg .candidate { fill: var(--cand); }
  svg .whisker { stroke: var(--ink); stroke-width: 1.5; }
  svg .threshold { stroke: var(--bad); stroke-width: 1.5; stroke-dasharray: 6 4; }
  svg .threshold-label { fill: var(--bad); }
  .flip { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem;
          margin: .6rem 0; }
  .flip h3 { font-size: .95rem; margin: 0 0 .3rem; }
  .flip .outputs { display: grid; grid-template-columns: 1fr 1fr; gap: .6rem; }
  .flip pre { white-space: pre-wrap; overflow-wrap: anywhere; unicode-bidi: plaintext;
              margin: .2rem 0; font-size: .85rem; background: #f6f8fa; padding: .4rem; }
  @media (max-width: 500px) { .flip .outputs { grid-template-columns: 1fr; } }
</style>
</head>
<body>
<h1>{{ title }}</h1>
<p class="meta">eval <code>{{ c.eval_id }}</code> · generated {{ generated_at }}</p>

{% set run = c.candidate %}
<div class="verdict {{ verdict_class }}">
  <strong>Verdict for v{{ run.agent_version }}: {{ run.passed | verdict }}</strong>
  {% if run.failure_reason %}<p>run {{ run.status }}: {{ run.failure_reason }}</p>{% endif %}
  <ul>
  {% for reason in run.reasons %}<li>{{ reason }}</li>
  {% else %}<li>no gate applies (the eval sets no pass_threshold)</li>{% endfor %}
  </ul>
</div>

<h2>Runs</h2>
<div class="table-box"><table>
  <tr><th></th>{% for role, r in runs %}<th>{{ role }} v{{ r.agent_version }}<br>
    <code>{{ r.run_id }}</code></th>{% endfor %}</tr>
  <tr><td>status</td>{% for _, r in runs %}<td>{{ r.status }}</td>{% endfor %}</tr>
  <tr><td>pass rate</td>{% for _, r in runs %}<td>{{ r.overall.rate | rate }}</td>{% endfor %}</tr>
  <tr><td>95% interval</td>
    {% for _, r in runs %}<td>{{ r.overall | interval }}</td>{% endfor %}</tr>
  <tr><td>items scored</td>{% for _, r in runs %}<td>{{ r.overall.scored }}</td>{% endfor %}</tr>
  <tr><td>items errored</td>{% for _, r in runs %}<td>{{ r.errored }}</td>{% endfor %}</tr>
  <tr><td>verdict</td>{% for _, r in runs %}<td>{{ r.passed | verdict }}</td>{% endfor %}</tr>
</table></div>
{% if c.change %}{% set ch = c.change %}
<p>Against baseline <code>{{ c.baseline_run_id }}</code>: pass rate
  <strong class="{{ ch.delta | direction }}">{{ ch.delta | delta }}</strong>
  over the {{ ch.compared }} items scored in both runs;
  {{ ch.improved }} improved (fail → pass), {{ ch.regressed }} regressed (pass → fail);
  exact McNemar p = {{ ch.p_value | p }}.
  {% if ch.added or ch.removed %}{{ ch.added }} items only scored in this run,
  {{ ch.removed }} only in the baseline.{% endif %}</p>
{% endif %}

{% if c.groups %}
<h2>By {{ c.group_by }}</h2>
<div class="table-box"><table>
  <tr><th>{{ c.group_by }}</th>
    {% if c.baseline %}<th>baseline v{{ c.baseline.agent_version }}</th>{% endif %}
    <th>candidate v{{ run.agent_version }}</th><th>Δ</th><th>improved</th><th>regressed</th>
    <th>p</th><th>p (Holm)</th></tr>
  {% for g in c.groups %}
  <tr><td>{{ g.label }}</td>
    {% if c.baseline %}<td>{{ g.baseline | rate_ci }}</td>{% endif %}
    <td>{{ g.candidate | rate_ci }}</td>
    {% if g.change %}<td class="{{ g.change.delta | direction }}">{{ g.change.delta | delta }}</td>
    <td>{{ g.change.improved }}</td><td>{{ g.change.regressed }}</td>
    <td>{{ g.change.p_value | p }}</td><td>{{ g.change.p_value_adjusted | p }}</td>
    {% else %}<td>—</td><td>—</td><td>—</td><td>—</td><td>—</td>{% endif %}</tr>
  {% endfor %}
</table></div>
{% endif %}

<h2>Pass rate{% if c.groups %} by {{ c.group_by }}{% endif %}</h2>
<svg xmlns="http://www.w3.org/2000/svg" role="img"
     width="{{ plot.width }}" height="{{ plot.height }}"
     viewBox="0 0 {{ plot.width }} {{ plot.height }}">
  <title>Pass rate{% if c.groups %} by {{ c.group_by }}{% endif %},
    baseline beside candidate, with 95% intervals</title>
  {% for t in plot.ticks %}
  <line class="grid" x1="{{ plot.left }}" x2="{{ plot.right }}" y1="{{ t.y }}" y2="{{ t.y }}"/>
  <text x="{{ plot.left - 8 }}" y="{{ t.label_y }}" text-anchor="end">{{ t.label }}</text>
  {% endfor %}
  <line class="axis" x1="{{ plot.left }}" x2="{{ plot.left }}"
        y1="{{ plot.top }}" y2="{{ plot.bottom }}"/>
  <text class="axis-title" text-anchor="middle"
        transform="translate({{ plot.y_title_x }}, {{ plot.y_title_y }}) rotate(-90)"
        >{{ plot.y_title }}</text>
  {% for b in plot.bars %}
  <g><title>{{ b.title }}</title>
    <rect class="{{ b.side }}" x="{{ b.x }}" y="{{ b.y }}"
          width="{{ b.width }}" height="{{ b.height }}"/>
    <line class="whisker" x1="{{ b.centre }}" x2="{{ b.centre }}"
          y1="{{ b.whisker_top }}" y2="{{ b.whisker_bottom }}"/>
    <line class="whisker" x1="{{ b.cap_left }}" x2="{{ b.cap_right }}"
          y1="{{ b.whisker_top }}" y2="{{ b.whisker_top }}"/>
    <line class="whisker" x1="{{ b.cap_left }}" x2="{{ b.cap_right }}"
          y1="{{ b.whisker_bottom }}" y2="{{ b.whisker_bottom }}"/>
    <text class="value" x="{{ b.centre }}" y="{{ b.value_label_y }}"
          text-anchor="middle">{{ b.value_label }}</text>
  </g>
  {% endfor %}
  {% for s in plot.slots %}
  <text x="{{ s.centre }}" y="{{ plot.label_y }}" text-anchor="middle">
    <title>{{ s.full_label }}</title>{{ s.label }}</text>
  {% endfor %}
  {% if plot.threshold_y is not none %}
  <line class="threshold" x1="{{ plot.left }}" x2="{{ plot.right }}"
        y1="{{ plot.threshold_y }}" y2="{{ plot.threshold_y }}"/>
  {% endif %}
  <g transform="translate({{ plot.left + 8 }}, 12)">
    {% if c.baseline %}<rect class="baseline" width="12" height="12"/>
    <text x="18" y="10">baseline v{{ c.baseline.agent_version }}</text>{% endif %}
    <g transform="translate({{ 150 if c.baseline else 0 }}, 0)">
      <rect class="candidate" width="12" height="12"/>
      <text x="18" y="10">candidate v{{ run.agent_version }}</text>
      {% if plot.threshold_y is not none %}
      <line class="threshold" x1="150" x2="174" y1="6" y2="6"/>
      <text class="threshold-label" x="180" y="10">{{ plot.threshold_label }}</text>
      {% endif %}
    </g>
  </g>
</svg>

{% if c.scorers %}
<h2>Scorers</h2>
<div class="table-box"><table>
  <tr><th>scorer</th>{% if c.baseline %}<th>baseline mean</th>{% endif %}<th>candidate mean</th>
    <th>candidate pass rate</th><th>Δ mean (items in both)</th></tr>
  {% for s in c.scorers %}
  <tr><td>{{ s.key }}</td>{% if c.baseline %}<td>{{ s.baseline_mean | rate }}</td>{% endif %}
    <td>{{ s.candidate_mean | rate }}</td><td>{{ s.candidate_pass_rate | rate }}</td>
    <td>{{ s.mean_delta | delta }}{% if s.test %} {{ s.test | signed_rank }}{% endif %}</td></tr>
  {% endfor %}
</table></div>
{% endif %}

{% if flips is not none %}
<h2 id="flipped">Flipped items</h2>
{% if flips.total %}
<p>{{ flips.total }} item{{ "s" if flips.total != 1 }} changed verdict, regressions first
  {%- if flips.more %}; the first {{ flips.shown | length }} are shown, and
  {{ flips.more }} more are not{% endif %}.</p>
{% for f in flips.shown %}
<div class="flip">
  <h3><span class="{{ 'down' if f.direction == regressed else 'up' }}">{{ f.direction }}
    ({{ "pass → fail" if f.direction == regressed else "fail → pass" }})</span>
    · item <code>{{ f.dataset_item_id }}</code></h3>
  {% if f.question is not none %}<pre class="question">{{ f.question }}</pre>{% endif %}
  <div class="outputs">
    <div><strong>baseline</strong>
      <pre>{{ f.baseline_output | default("(no output)", true) }}</pre></div>
    <div><strong>candidate</strong>
      <pre>{{ f.candidate_output | default("(no output)", true) }}</pre></div>
  </div>
</div>
{% endfor %}
{% if flips.more %}<p class="note">{{ flips.more }} more flipped item{{ "s" if flips.more != 1 }}
  not shown (the report shows at most {{ flips.shown | length }}).</p>{% endif %}
{% else %}
<p>No item changed verdict between the runs.</p>
{% endif %}
{% endif %}

<p class="note">Intervals are 95% Wilson score intervals. p is the exact two-sided McNemar
test on the items whose verdict flipped between the runs; p (Holm) adjusts the groups'
p-values for testing several groups at once. Errored items are left out of every figure.</p>
</body>
</html>
"""
