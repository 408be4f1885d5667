// memgate's usage dashboard: draws GET /usage, /usage/top and /policies with uPlot (the
// global its script defines, served by memgate). A plain browser module: no build step.

/* global window, document, location, history, fetch, URL, URLSearchParams, AbortController, setTimeout, clearTimeout, getComputedStyle, matchMedia, ResizeObserver, Path2D -- the browser's: eslint.config.js names no browser globals */

/** @typedef {{ t: number, allowed: number, denied: number, degraded: number, shadow_denied: number, settled?: number, settled_cost?: number, tracked?: { allowed: boolean, denied: boolean } }} Point */
/** @typedef {{ event: string, feature: string | null, from: number, until: number, step: number, points: Point[] }} Series */
/** @typedef {{ feature: string, count: number }} ClientCount */
/** @typedef {{ event: string, from: number, until: number, allowed: ClientCount[], denied: ClientCount[] }} Top */
/** @typedef {{ name: string, limit: number, window: number }} Limit */
/** @typedef {{ name: string, value: number, text: string }} LimitLine */
/** A range ending now (`-1h` to `now`, drawn again every few seconds), or a fixed one in epoch seconds. */
/** @typedef {{ preset: string } | { from: number, until: number }} Range */

/** memgate's root, wherever the page is served from (a proxy may add a path prefix). */
const ROOT = new URL('../', import.meta.url);
/** A range ending now is asked again this often. */
const LIVE_MS = 5000;
/** Chart pixels per point: /usage is asked for width / 4 points and picks the step itself. */
const PIXELS_PER_POINT = 4;
const TOP_CLIENTS = 15;
/** The dash of each limit line, so two limits of one event read apart. */
const DASHES = [
  [6, 4],
  [2, 3],
  [10, 3, 2, 3],
];
/** The dash of the shadow line: none of the limits'. */
const SHADOW_DASH = [6, 2];
/** The cost chart's height: a companion of the decisions' chart, not a second one as tall. */
const COST_HEIGHT = 150;
/** What the two charts share their cursor by: a point hovered in one is shown in both. */
const CURSOR_SYNC = { key: 'memgate-usage', filters: { pub: (/** @type {string} */ type) => type === 'mousemove' } };

/** @type {any} uPlot's global, from dashboard/uplot.min.js, loaded before this module. */
const uPlot = Reflect.get(window, 'uPlot');

const $ = {
  event: /** @type {HTMLSelectElement} */ (byId('event')),
  client: /** @type {HTMLSelectElement} */ (byId('client')),
  live: byId('live'),
  presets: [...document.querySelectorAll('button[data-range]')].map((b) => /** @type {HTMLButtonElement} */ (b)),
  custom: /** @type {HTMLFormElement} */ (byId('custom')),
  from: /** @type {HTMLInputElement} */ (byId('from')),
  until: /** @type {HTMLInputElement} */ (byId('until')),
  zoomOut: /** @type {HTMLButtonElement} */ (byId('zoom-out')),
  title: byId('curve-title'),
  range: byId('curve-range'),
  message: byId('message'),
  chart: byId('chart'),
  limits: byId('limits'),
  shadowNote: byId('shadow-note'),
  costs: byId('costs'),
  costsTotal: byId('costs-total'),
  costChart: byId('cost-chart'),
  top: /** @type {HTMLTableElement} */ (byId('top')),
  topMessage: byId('top-message'),
};

const state = {
  event: '',
  /** The client whose curve is drawn; '' for the whole event. */
  feature: '',
  /** @type {Range} */
  range: { preset: '1h' },
  /** The ranges zoomed in from, newest last: Zoom out goes back to them. */
  /** @type {Range[]} */
  zoomedFrom: [],
  /** Each event's limits, from /policies. */
  /** @type {Map<string, Limit[]>} */
  limits: new Map(),
};

/** What the chart shows now: kept to draw it again when the theme changes. */
const view = {
  /** @type {any} */
  plot: undefined,
  /** Series labels of the plot: a different set needs a new plot. */
  shape: '',
  /** @type {Series | undefined} */
  series: undefined,
  /** @type {LimitLine[]} */
  lines: [],
  /** Whether the range has any shadow_denied: its line and legend entry are drawn only then. */
  shadow: false,
  /** The settled costs' own chart, drawn only when the range has a settle. @type {any} */
  costPlot: undefined,
  yMax: 1,
  /** The time axis's last ticks and their labels, as timeTicks wrote them. @type {[number, string][]} */
  timeLabels: [],
};

let generation = 0;
/** @type {AbortController | undefined} */
let inFlight;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let refreshTimer;

/** An answer of memgate's that is not a 2xx, with its error code and message. */
class ApiError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** @param {string} id */
function byId(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}

/**
 * GET a route of memgate's, relative to its root; the body of a 4xx or 5xx becomes an
 * ApiError with memgate's own message.
 * @param {string} path
 * @param {Record<string, string | number>} [params]
 * @param {AbortSignal} [signal]
 */
async function getJson(path, params = {}, signal) {
  const url = new URL(path, ROOT);
  for (const [name, value] of Object.entries(params)) if (value !== '') url.searchParams.set(name, String(value));
  let response;
  try {
    response = await fetch(url, { signal, headers: { accept: 'application/json' } });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError('unreachable', `memgate did not answer ${url.pathname}: ${String(error)}`);
  }
  const body = await response.json().catch(() => undefined);
  if (!response.ok) {
    const error = body?.error;
    throw new ApiError(
      error?.code ?? `http_${response.status}`,
      error?.message ?? `${url.pathname} answered ${response.status}`,
    );
  }
  return body;
}

// ---------------------------------------------------------------------------------------
// Formatting

const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const compactFormat = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });
const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
/** Moments, as precise as a point's step needs: days, minutes or seconds. */
const momentFormats = {
  day: new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', year: 'numeric' }),
  minute: new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }),
  second: new Intl.DateTimeFormat(undefined, {
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }),
};

const tickFormats = {
  second: new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' }),
  minute: new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }),
  day: new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short' }),
  month: new Intl.DateTimeFormat(undefined, { month: 'short', year: 'numeric' }),
};

/** @param {number} seconds epoch seconds */
const date = (seconds) => new Date(seconds * 1000);

/** `90` → `1.5 min`, `3600` → `1 h`: a span as people say it. @param {number} seconds */
function duration(seconds) {
  const units = /** @type {const} */ ([
    [31_536_000, 'y'],
    [86_400, 'd'],
    [3600, 'h'],
    [60, 'min'],
  ]);
  for (const [size, unit] of units) if (seconds >= size) return `${numberFormat.format(seconds / size)} ${unit}`;
  return `${seconds} s`;
}

/** A moment as precise as a point of `step` seconds needs. @param {number} seconds @param {number} step */
function moment(seconds, step) {
  const format = step >= 86_400 ? momentFormats.day : step >= 60 ? momentFormats.minute : momentFormats.second;
  return format.format(date(seconds));
}

/** A datetime-local input's value, in local time. @param {number} seconds */
function localInput(seconds) {
  const d = date(seconds);
  const two = (/** @type {number} */ n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Partial<HTMLElementTagNameMap[K]>} [props]
 * @param {(Node | string)[]} children
 */
function element(tag, props = {}, ...children) {
  const made = Object.assign(document.createElement(tag), props);
  made.append(...children);
  return made;
}

// ---------------------------------------------------------------------------------------
// The limit lines

/**
 * Where a limit of `limit` per `window` seconds lies on a curve of `step` seconds a point.
 * A point spanning whole windows may hold at most limit × step / window; a point shorter
 * than the window may hold at most the limit itself (and the points of one window, together,
 * no more either).
 * @param {Limit} limit
 * @param {number} step
 * @returns {LimitLine}
 */
function limitLine({ name, limit, window }, step) {
  if (step >= window) {
    const value = (limit * step) / window;
    const scaled = step === window ? '' : ` (${limit} × ${duration(step)} ÷ ${duration(window)})`;
    return {
      name,
      value,
      text: `${name}: ${limit} per ${duration(window)}, so at most ${numberFormat.format(value)} allowed in a point of ${duration(step)}${scaled}.`,
    };
  }
  return {
    name,
    value: limit,
    text: `${name}: ${limit} per ${duration(window)}, a window longer than a point (${duration(step)}): no single point may exceed ${limit}, and the points of one window together may not either.`,
  };
}

// ---------------------------------------------------------------------------------------
// The chart

/** The page's colours, read from its style sheet (light or dark). */
function colours() {
  const style = getComputedStyle(document.documentElement);
  const read = (/** @type {string} */ name) => style.getPropertyValue(`--${name}`).trim();
  return {
    fg: read('fg'),
    muted: read('muted'),
    grid: read('grid'),
    allowed: read('allowed'),
    allowedFill: read('allowed-fill'),
    denied: read('denied'),
    deniedFill: read('denied-fill'),
    degraded: read('degraded'),
    degradedFill: read('degraded-fill'),
    shadow: read('shadow'),
    cost: read('cost'),
    costFill: read('cost-fill'),
    limit: read('limit'),
    untracked: read('untracked'),
  };
}

/**
 * Whether a client's count of `outcome` at `point` is not fully known: /usage says it was
 * below the heaviest in some of that step while others went unnamed, so the point holds
 * only what the rest of the step counted (0 when it was below them all along).
 * @param {Point | undefined} point
 * @param {string} outcome
 */
function untracked(point, outcome) {
  return (outcome === 'allowed' || outcome === 'denied') && point?.tracked?.[outcome] === false;
}

/** @param {Point} point */
function untrackedStep(point) {
  return untracked(point, 'allowed') || untracked(point, 'denied');
}

/**
 * Shades the steps where the client's counts are unknown, under the curves (uPlot's
 * drawClear hook: after the canvas is cleared, before anything is drawn).
 * @param {any} u the plot
 */
function shadeUntracked(u) {
  const series = view.series;
  if (!series || series.feature === null) return;
  const { ctx, bbox } = u;
  ctx.save();
  ctx.fillStyle = colours().untracked;
  for (const point of series.points) {
    if (!untrackedStep(point)) continue;
    const left = u.valToPos(point.t, 'x', true);
    const right = u.valToPos(point.t + series.step, 'x', true);
    ctx.fillRect(left, bbox.top, Math.max(1, right - left), bbox.height);
  }
  ctx.restore();
}

/**
 * uPlot's data: the points stacked (allowed, + denied, + degraded); shadow_denied on its own,
 * not stacked, as it is a part of allowed (when the range has any); then one constant line a limit.
 */
function chartData() {
  const { series, lines } = view;
  if (!series) return [[]];
  const points = series.points;
  const last = points.at(-1);
  // One more x at the end, so that the last step is drawn its whole width.
  const xs = [...points.map((p) => p.t), ...(last ? [last.t + series.step] : [])];
  const at = (/** @type {number} */ i) => points[Math.min(i, points.length - 1)];
  const allowed = xs.map((_, i) => at(i)?.allowed ?? 0);
  const denied = xs.map((_, i) => allowed[i] + (at(i)?.denied ?? 0));
  const degraded = xs.map((_, i) => denied[i] + (at(i)?.degraded ?? 0));
  const shadow = view.shadow ? [xs.map((_, i) => at(i)?.shadow_denied ?? 0)] : [];
  return [xs, allowed, denied, degraded, ...shadow, ...lines.map((line) => xs.map(() => line.value))];
}

/**
 * The shadow line (a uPlot path builder): stepped like the curves, but only where there is
 * some. A run of steps with some rises from the axis, follows their counts and falls back to
 * it; nothing is drawn along the axis between runs, where it would hide the allowed curve's
 * zero.
 * @param {any} u the plot
 * @param {number} seriesIdx
 * @param {number} idx0
 * @param {number} idx1
 */
function shadowPath(u, seriesIdx, idx0, idx1) {
  const xs = u.data[0];
  const counts = u.data[seriesIdx];
  const axis = u.valToPos(0, 'y', true);
  const x = (/** @type {number} */ i) => u.valToPos(xs[i], 'x', true);
  const stroke = new Path2D();
  let inRun = false;
  // The last x only closes the last step (chartData): no step of its own.
  const last = Math.min(idx1, xs.length - 1);
  for (let i = idx0; i < last; i++) {
    const count = counts[i];
    if (count) {
      const y = u.valToPos(count, 'y', true);
      if (!inRun) stroke.moveTo(x(i), axis);
      stroke.lineTo(x(i), y);
      stroke.lineTo(x(i + 1), y);
    } else if (inRun) stroke.lineTo(x(i), axis);
    inRun = Boolean(count);
  }
  if (inRun) stroke.lineTo(x(last), axis);
  return { stroke, fill: null, clip: null, band: null, flags: 0 };
}

/** What the legend says of an outcome at the cursor: the point's own count, not the stack's. */
function countAt(/** @type {keyof Point} */ outcome) {
  return (
    /** @type {unknown} */ _plot,
    /** @type {unknown} */ _value,
    /** @type {unknown} */ _index,
    /** @type {number | null} */ i,
  ) => {
    const points = view.series?.points ?? [];
    const point = i === null ? undefined : points[Math.min(i, points.length - 1)];
    if (!point) return '–';
    const count = Number(point[outcome]);
    if (outcome === 't' || outcome === 'tracked' || !untracked(point, outcome)) return numberFormat.format(count);
    return count === 0 ? 'not tracked' : `at least ${numberFormat.format(count)}`;
  };
}

/**
 * Pixels between time ticks (uPlot's axis space): room for the widest label of the range, so
 * that labels never run into each other on a narrow window. Ranges up to half an hour may
 * tick in seconds, whose labels are the widest.
 */
function timeTickSpace(
  /** @type {unknown} */ _plot,
  /** @type {unknown} */ _axis,
  /** @type {number} */ min,
  /** @type {number} */ max,
) {
  return max - min <= 1800 ? 90 : 72;
}

/** Time ticks in the page's locale and time zone: the time, and the date under the first tick of each day. */
function timeTicks(
  /** @type {unknown} */ _plot,
  /** @type {number[]} */ ticks,
  /** @type {unknown} */ _axis,
  /** @type {unknown} */ _space,
  /** @type {number} */ increment,
) {
  const labels = timeLabels(ticks, increment);
  view.timeLabels = ticks.map((t, i) => [t, labels[i] ?? '']);
  return labels;
}

/**
 * @param {number[]} ticks
 * @param {number} increment
 */
function timeLabels(ticks, increment) {
  if (increment >= 28 * 86_400) return ticks.map((t) => tickFormats.month.format(date(t)));
  if (increment >= 86_400) return ticks.map((t) => tickFormats.day.format(date(t)));
  const time = increment < 60 ? tickFormats.second : tickFormats.minute;
  let previousDay = '';
  return ticks.map((t) => {
    const day = tickFormats.day.format(date(t));
    const newDay = day !== previousDay;
    previousDay = day;
    return newDay ? `${time.format(date(t))}\n${day}` : time.format(date(t));
  });
}

/**
 * Where the time axis's labels are, in CSS pixels from the plot's left, as data-time-ticks:
 * what a test needs to see that none runs into the next (uPlot draws them on the canvas).
 * @param {any} u the plot
 */
function recordTimeTicks(u) {
  const ticks = view.timeLabels.map(([t, label]) => ({ x: Math.round(u.valToPos(t, 'x')), label }));
  $.chart.dataset.timeTicks = JSON.stringify(ticks);
}

/** The look of both charts' axes, in the theme's colours. */
function axisStyle(/** @type {ReturnType<typeof colours>} */ c) {
  return { stroke: c.muted, grid: { stroke: c.grid, width: 1 }, ticks: { stroke: c.grid, width: 1 } };
}

/** A y axis of counts or costs, compactly written (12K). */
function countAxis(/** @type {ReturnType<typeof axisStyle>} */ axis) {
  return {
    ...axis,
    size: 56,
    values: (/** @type {unknown} */ _, /** @type {number[]} */ ticks) => ticks.map((t) => compactFormat.format(t)),
  };
}

/** Both charts' x series: each point's moment and step, as the legend shows them. */
const TIME_SERIES = {
  label: 'Time',
  value: (/** @type {unknown} */ _, /** @type {number | null} */ t) => {
    const step = view.series?.step ?? 1;
    return t === null ? '–' : `${moment(t, step)} + ${duration(step)}`;
  },
};

function chartOptions() {
  const c = colours();
  const stepped = uPlot.paths.stepped({ align: 1 });
  const axis = axisStyle(c);
  const outcome = (
    /** @type {string} */ label,
    /** @type {string} */ stroke,
    /** @type {string} */ fill,
    /** @type {keyof Point} */ key,
    /** @type {number} */ width,
  ) => ({
    label,
    stroke,
    fill,
    width,
    paths: stepped,
    points: { show: false },
    value: countAt(key),
  });
  return {
    width: chartWidth(),
    height: chartHeight(),
    cursor: {
      y: false,
      drag: { x: true, y: false, setScale: false },
      points: { show: false },
      sync: CURSOR_SYNC,
    },
    scales: { x: { time: true }, y: { range: () => [0, view.yMax] } },
    axes: [{ ...axis, space: timeTickSpace, values: timeTicks }, countAxis(axis)],
    series: [
      TIME_SERIES,
      // Only the lowest area has a line: above it, a line where an outcome is zero would
      // trace the one below and colour the whole curve.
      outcome('Allowed', c.allowed, c.allowedFill, 'allowed', 1.5),
      outcome('Denied', c.denied, c.deniedFill, 'denied', 0),
      outcome('Degraded', c.degraded, c.degradedFill, 'degraded', 0),
      // A line over the allowed area, not a layer of the stack: these were allowed too.
      ...(view.shadow
        ? [
            {
              label: 'would be denied (shadow)',
              stroke: c.shadow,
              width: 2,
              dash: SHADOW_DASH,
              paths: shadowPath,
              points: { show: false },
              value: countAt('shadow_denied'),
            },
          ]
        : []),
      ...view.lines.map((line, i) => ({
        label: `${line.name} limit`,
        stroke: c.limit,
        width: 2,
        dash: DASHES[i % DASHES.length],
        points: { show: false },
        // Read at each hover: a new step moves the line without a new plot.
        value: () => numberFormat.format(view.lines[i]?.value ?? line.value),
      })),
    ],
    // Each outcome's area lies between its curve and the one below it: a stack.
    bands: [
      { series: [2, 1], fill: c.deniedFill },
      { series: [3, 2], fill: c.degradedFill },
    ],
    hooks: { setSelect: [zoomToSelection], drawClear: [shadeUntracked], draw: [recordTimeTicks] },
  };
}

/**
 * The cost chart's data: each point's settled cost, with the decisions' xs (the same steps,
 * and one more x closing the last).
 */
function costData() {
  const points = view.series?.points ?? [];
  const last = points.at(-1);
  const step = view.series?.step ?? 1;
  const xs = [...points.map((p) => p.t), ...(last ? [last.t + step] : [])];
  return [xs, xs.map((_, i) => points[Math.min(i, points.length - 1)]?.settled_cost ?? 0)];
}

/**
 * The settled costs' chart: under the decisions', as wide, on the same steps and time axis,
 * its cursor moving with theirs; its own y axis, in the units the limits count.
 */
function costOptions() {
  const c = colours();
  const axis = axisStyle(c);
  return {
    width: chartWidth(),
    height: COST_HEIGHT,
    cursor: {
      y: false,
      drag: { x: true, y: false, setScale: false },
      points: { show: false },
      sync: CURSOR_SYNC,
    },
    scales: {
      x: { time: true },
      y: {
        range: (/** @type {unknown} */ _u, /** @type {number} */ _min, /** @type {number} */ max) => [
          0,
          uPlot.rangeNum(0, Math.max(1, max), 0.1, true)[1],
        ],
      },
    },
    axes: [
      {
        ...axis,
        space: timeTickSpace,
        values: (
          /** @type {unknown} */ _u,
          /** @type {number[]} */ ticks,
          /** @type {unknown} */ _axis,
          /** @type {unknown} */ _space,
          /** @type {number} */ increment,
        ) => timeLabels(ticks, increment),
      },
      countAxis(axis),
    ],
    series: [
      TIME_SERIES,
      {
        label: 'Settled cost',
        stroke: c.cost,
        fill: c.costFill,
        width: 1.5,
        paths: uPlot.paths.stepped({ align: 1 }),
        points: { show: false },
        value: settledAt,
      },
    ],
    hooks: { setSelect: [zoomToSelection] },
  };
}

/** What the cost chart's legend says at the cursor: the point's cost, and how many settles it sums. */
function settledAt(
  /** @type {unknown} */ _plot,
  /** @type {unknown} */ _value,
  /** @type {unknown} */ _index,
  /** @type {number | null} */ i,
) {
  const points = view.series?.points ?? [];
  const point = i === null ? undefined : points[Math.min(i, points.length - 1)];
  if (!point) return '–';
  const settled = point.settled ?? 0;
  return `${numberFormat.format(point.settled_cost ?? 0)} (${numberFormat.format(settled)} ${settled === 1 ? 'settle' : 'settles'})`;
}

/** Draws the settled costs of view.series when it has a settle, else takes their chart away. */
function plotCosts() {
  if ($.costs.hidden) {
    view.costPlot?.destroy();
    view.costPlot = undefined;
    return;
  }
  const data = costData();
  if (view.costPlot) view.costPlot.setData(data);
  else view.costPlot = new uPlot(costOptions(), data, $.costChart);
}

/** As tall as the window leaves room for, within reason. */
function chartHeight() {
  return Math.max(240, Math.min(520, window.innerHeight - 400));
}

function chartWidth() {
  return Math.max(320, Math.floor($.chart.clientWidth || $.chart.getBoundingClientRect().width));
}

/** Draws view.series, in a new plot when its series differ from the one drawn. */
function plot() {
  const data = chartData();
  const stackTop = Math.max(0, ...(data[3] ?? []));
  // The tightest limit always shows, so a client's curve reads against it; looser ones may lie above.
  const tightest = Math.min(...view.lines.map((line) => line.value));
  const highest = Math.max(1, stackTop, Number.isFinite(tightest) ? tightest : 0);
  view.yMax = uPlot.rangeNum(0, highest, 0.1, true)[1];
  const shape = `${view.shadow ? 'shadow;' : ''}${view.lines.map((line) => line.name).join(',')}`;
  if (view.plot && view.shape === shape) {
    view.plot.setData(data);
    return;
  }
  view.plot?.destroy();
  view.shape = shape;
  view.plot = new uPlot(chartOptions(), data, $.chart);
}

/** @param {any} u the plot */
function zoomToSelection(u) {
  const { left, width } = u.select;
  if (width < 2) return;
  const from = Math.floor(u.posToVal(left, 'x'));
  const until = Math.ceil(u.posToVal(left + width, 'x'));
  u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
  if (until - from < 2) return;
  state.zoomedFrom.push(state.range);
  state.range = { from, until };
  void load();
}

// ---------------------------------------------------------------------------------------
// Drawing answers

/** @param {Series} series */
function showSeries(series) {
  const lines = series.feature === null ? [] : (state.limits.get(series.event) ?? []);
  view.series = series;
  view.lines = lines.map((limit) => limitLine(limit, series.step));
  const shadowDenied = series.points.reduce((sum, point) => sum + (point.shadow_denied ?? 0), 0);
  view.shadow = shadowDenied > 0;
  $.shadowNote.hidden = !view.shadow;
  // Settles are counted per event: a client's curve has none, and its cost chart is not drawn.
  const settled = series.points.reduce((sum, point) => sum + (point.settled ?? 0), 0);
  const settledCost = series.points.reduce((sum, point) => sum + (point.settled_cost ?? 0), 0);
  $.costs.hidden = settled === 0;
  $.costsTotal.textContent = `${numberFormat.format(settledCost)} in all, from ${numberFormat.format(settled)} ${settled === 1 ? 'settle' : 'settles'}`;
  $.message.hidden = true;
  Object.assign($.chart.dataset, {
    state: 'ready',
    points: String(series.points.length),
    step: String(series.step),
    from: String(series.from),
    until: String(series.until),
    feature: series.feature ?? '',
    limits: String(view.lines.length),
    shadowDenied: String(shadowDenied),
    settled: String(settled),
    settledCost: String(settledCost),
    untracked: String(series.points.filter(untrackedStep).length),
  });
  $.title.textContent = `${series.event} · ${series.feature ?? 'all clients'}`;
  const preset = 'preset' in state.range ? presetLabel(state.range.preset) : '';
  $.range.textContent = `${preset ? `Last ${preset}: ` : ''}${moment(series.from, series.step)} – ${moment(series.until, series.step)} · decisions per ${duration(series.step)}, ${series.points.length} points`;
  // The custom range shows what is drawn, ready to adjust, unless it is being edited.
  if (!$.custom.contains(document.activeElement)) {
    $.from.value = localInput(series.from);
    $.until.value = localInput(series.until);
  }
  plot();
  plotCosts();
  showLimits(series);
}

/** @param {Series} series */
function showLimits(series) {
  $.limits.replaceChildren();
  $.limits.hidden = series.feature === null;
  if (series.feature === null) return;
  const unknown = series.points.filter(untrackedStep).length;
  if (unknown > 0) {
    $.limits.append(
      element(
        'p',
        { className: 'untracked-note' },
        element('span', { className: 'swatch untracked' }),
        `Not tracked in ${unknown} of ${series.points.length} points (shaded): ${series.feature} was below the heaviest clients there, so its count is unknown (not 0), or in part of the point only a lower bound.`,
      ),
    );
  }
  if (view.lines.length === 0) {
    $.limits.append(element('p', { className: 'muted' }, `The policies in use give ${series.event} no limit.`));
    return;
  }
  const rule =
    'A limit of L per window W is drawn in the chart’s unit, decisions per point of S seconds: at most L × S ÷ W when a point spans whole windows (S ≥ W); when a point is shorter than the window (S < W), L itself, which no single point may exceed.';
  $.limits.append(
    element(
      'p',
      { className: 'muted', title: rule },
      'Dashed lines: the allowed decisions each limit permits per point.',
    ),
  );
  for (const line of view.lines) {
    const above = line.value > view.yMax ? ' (above the chart)' : '';
    $.limits.append(element('p', { title: rule }, element('span', { className: 'swatch' }), `${line.text}${above}`));
  }
}

/** @param {Top | ApiError} top */
function showTop(top) {
  const body = $.top.tBodies[0];
  body?.replaceChildren();
  $.topMessage.hidden = true;
  if (top instanceof Error) {
    $.topMessage.textContent = top.message;
    $.topMessage.hidden = false;
    return;
  }
  /** @type {Map<string, { allowed: number, denied: number }>} */
  const clients = new Map();
  const counts = (/** @type {string} */ feature) => {
    let found = clients.get(feature);
    if (!found) clients.set(feature, (found = { allowed: 0, denied: 0 }));
    return found;
  };
  for (const { feature, count } of top.allowed) counts(feature).allowed += count;
  for (const { feature, count } of top.denied) counts(feature).denied += count;
  const rows = [...clients].sort(([a, x], [b, y]) => y.allowed + y.denied - (x.allowed + x.denied) || (a < b ? -1 : 1));
  for (const [feature, { allowed, denied }] of rows) {
    const button = element(
      'button',
      { type: 'button', className: 'client', title: `${feature}: its curve and its limits` },
      feature,
    );
    button.addEventListener('click', () => chooseClient(feature === state.feature ? '' : feature));
    const share = element('i');
    share.style.width = `${(100 * denied) / Math.max(1, allowed + denied)}%`;
    const row = element(
      'tr',
      {},
      element('th', { scope: 'row' }, button),
      element('td', { className: 'number' }, numberFormat.format(allowed)),
      element('td', { className: 'number denied' }, numberFormat.format(denied)),
      element(
        'td',
        { className: 'share', title: `${Math.round((100 * denied) / Math.max(1, allowed + denied))}% denied` },
        element('span', {}, share),
      ),
    );
    if (denied === 0) row.cells[2]?.setAttribute('data-zero', '');
    if (feature === state.feature) row.setAttribute('aria-current', 'true');
    body?.append(row);
  }
  if (rows.length === 0) {
    $.topMessage.textContent = 'No client in this range.';
    $.topMessage.hidden = false;
  }
  // The client picker offers the same clients, and the one drawn even when it left the top.
  const features = rows.map(([feature]) => feature);
  if (state.feature && !features.includes(state.feature)) features.push(state.feature);
  $.client.replaceChildren(
    element('option', { value: '' }, 'All clients'),
    ...features.map((f) => element('option', { value: f }, f)),
  );
  $.client.value = state.feature;
}

/** @param {string} text */
function showError(text) {
  $.message.dataset.kind = 'error';
  $.message.textContent = text;
  $.message.hidden = false;
  $.chart.dataset.state = 'error';
  $.limits.hidden = true;
  $.shadowNote.hidden = true;
  $.costs.hidden = true;
}

/** Usage history is off: the page says so, and asks nothing more. @param {string} text */
function showOff(text) {
  $.message.dataset.kind = 'off';
  $.message.replaceChildren(
    element('strong', {}, 'Usage history is off on this memgate, so there is nothing to draw. '),
    `It answers: “${text}”. Turn it on with MEMGATE_USAGE_DB (a SQLite file; ./data/usage.db by default), or read it from Graphite with MEMGATE_GRAPHITE_WEB.`,
  );
  $.message.hidden = false;
  $.chart.dataset.state = 'off';
  $.shadowNote.hidden = true;
  $.costs.hidden = true;
  $.title.textContent = 'Decisions';
  $.range.textContent = '';
  $.live.textContent = '';
  $.topMessage.textContent = 'Usage history is off.';
  $.topMessage.hidden = false;
  for (const control of [$.event, $.client, $.zoomOut, ...$.presets, ...$.custom.elements]) {
    /** @type {HTMLButtonElement} */ (control).disabled = true;
  }
}

/** The controls, as the state says. */
function showControls() {
  for (const button of $.presets) {
    const pressed = 'preset' in state.range && state.range.preset === button.dataset.range;
    button.setAttribute('aria-pressed', String(pressed));
  }
  $.zoomOut.disabled = state.zoomedFrom.length === 0;
  $.event.value = state.event;
  const live = 'preset' in state.range;
  $.live.dataset.live = String(live);
  $.live.textContent = live ? `Live, every ${LIVE_MS / 1000} s` : 'Fixed range';
}

/** @param {string} preset */
function presetLabel(preset) {
  return $.presets.find((button) => button.dataset.range === preset)?.textContent ?? preset;
}

// ---------------------------------------------------------------------------------------
// Loading

/** The range as /usage takes it: relative to memgate's clock while it ends now. */
function rangeParams() {
  const { range } = state;
  return 'preset' in range ? { from: `-${range.preset}`, until: 'now' } : { from: range.from, until: range.until };
}

/** Asks for the curve and the top clients of the state, and draws them. @param {{ quiet?: boolean }} [options] */
async function load({ quiet = false } = {}) {
  clearTimeout(refreshTimer);
  inFlight?.abort();
  const controller = new AbortController();
  inFlight = controller;
  const mine = ++generation;
  writeHash();
  showControls();
  if (!quiet) $.chart.dataset.state = 'loading';
  const range = rangeParams();
  const maxDataPoints = Math.min(10_000, Math.max(10, Math.floor(chartWidth() / PIXELS_PER_POINT)));
  const { signal } = controller;
  let off = false;
  try {
    const [series, top] = await Promise.all([
      getJson('usage', { event: state.event, feature: state.feature, ...range, maxDataPoints }, signal),
      // The curve is drawn even when the table cannot be.
      getJson('usage/top', { event: state.event, ...range, limit: TOP_CLIENTS }, signal).catch((error) =>
        error instanceof ApiError ? error : Promise.reject(error),
      ),
    ]);
    if (mine !== generation) return;
    showSeries(series);
    showTop(top);
    if ('preset' in state.range)
      $.live.textContent = `Live, every ${LIVE_MS / 1000} s · ${timeFormat.format(new Date())}`;
  } catch (error) {
    if (signal.aborted || mine !== generation) return;
    if (error instanceof ApiError && error.code === 'usage_off') {
      off = true;
      showOff(error.message);
    } else showError(error instanceof Error ? error.message : String(error));
  } finally {
    // A range ending now is asked again; after an error too, so the page recovers by itself.
    if (mine === generation && !off && 'preset' in state.range) refreshTimer = setTimeout(refresh, LIVE_MS);
  }
}

/** The live refresh: not while the page is hidden, at once when it shows again. */
function refresh() {
  if (document.hidden) document.addEventListener('visibilitychange', refresh, { once: true });
  else void load({ quiet: true });
}

function writeHash() {
  const params = new URLSearchParams({ event: state.event });
  if (state.feature) params.set('client', state.feature);
  if ('preset' in state.range) params.set('range', state.range.preset);
  else {
    params.set('from', String(state.range.from));
    params.set('until', String(state.range.until));
  }
  history.replaceState(null, '', `#${params}`);
}

/** The state a link gave: #event=login&client=…&range=1h, or &from=…&until=… in epoch seconds. */
function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  state.event = params.get('event') ?? '';
  state.feature = params.get('client') ?? '';
  const preset = params.get('range');
  const from = Number(params.get('from'));
  const until = Number(params.get('until'));
  if (preset && $.presets.some((button) => button.dataset.range === preset)) state.range = { preset };
  else if (Number.isInteger(from) && Number.isInteger(until) && from > 0 && until > from) state.range = { from, until };
}

// ---------------------------------------------------------------------------------------
// What people do

/** @param {string} feature */
function chooseClient(feature) {
  state.feature = feature;
  void load();
}

/** @param {Range} range */
function chooseRange(range) {
  state.range = range;
  state.zoomedFrom = [];
  void load();
}

function listen() {
  $.event.addEventListener('change', () => {
    state.event = $.event.value;
    state.feature = '';
    void load();
  });
  $.client.addEventListener('change', () => chooseClient($.client.value));
  for (const button of $.presets)
    button.addEventListener('click', () => chooseRange({ preset: button.dataset.range ?? '1h' }));
  $.custom.addEventListener('submit', (submitted) => {
    submitted.preventDefault();
    const from = Math.floor(new Date($.from.value).getTime() / 1000);
    const until = Math.floor(new Date($.until.value).getTime() / 1000);
    $.until.setCustomValidity(from < until ? '' : 'The end must come after the start.');
    if (!$.custom.reportValidity()) return;
    chooseRange({ from, until });
  });
  $.until.addEventListener('input', () => $.until.setCustomValidity(''));
  $.zoomOut.addEventListener('click', () => {
    const previous = state.zoomedFrom.pop();
    if (!previous) return;
    state.range = previous;
    void load();
  });
  // A link edited in the address bar, or followed from elsewhere on the page.
  window.addEventListener('hashchange', () => {
    readHash();
    state.zoomedFrom = [];
    if (state.event) void load();
  });
  // The plot follows the page's width, and its colours the light or dark theme.
  new ResizeObserver(() => {
    view.plot?.setSize({ width: chartWidth(), height: chartHeight() });
    view.costPlot?.setSize({ width: chartWidth(), height: COST_HEIGHT });
  }).observe($.chart);
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
    if (!view.series) return;
    view.plot?.destroy();
    view.plot = undefined;
    plot();
    view.costPlot?.destroy();
    view.costPlot = undefined;
    plotCosts();
  });
}

/** The events: the policies' in their order, then any other with usage recorded. */
async function start() {
  readHash();
  listen();
  showControls();
  if (!uPlot) return showError('The chart library (dashboard/uplot.min.js) did not load.');
  let recorded;
  let policies;
  try {
    [recorded, policies] = await Promise.all([getJson('usage/events'), getJson('policies')]);
  } catch (error) {
    if (error instanceof ApiError && error.code === 'usage_off') return showOff(error.message);
    return showError(error instanceof Error ? error.message : String(error));
  }
  for (const policy of policies.events ?? []) state.limits.set(policy.event, policy.limits ?? []);
  /** @type {{ event: string, until: number }[]} */
  const ranges = recorded.events ?? [];
  const events = [
    ...state.limits.keys(),
    ...ranges
      .map((r) => r.event)
      .filter((e) => !state.limits.has(e))
      .sort(),
  ];
  if (events.length === 0) {
    showError('Nothing to draw yet: the policy file names no event, and no usage is recorded.');
    return;
  }
  $.event.replaceChildren(...events.map((event) => element('option', { value: event }, event)));
  $.event.disabled = false;
  $.client.disabled = false;
  // The event a link named; else the one with the newest data; else the policy file's first.
  const newest = [...ranges].sort((a, b) => b.until - a.until)[0]?.event;
  if (!events.includes(state.event)) state.event = newest ?? events[0] ?? '';
  await load();
}

void start();
