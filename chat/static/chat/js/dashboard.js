// The operator dashboard's charts, drawn by Chart.js (loaded before this module as window.Chart).
const data = JSON.parse(document.getElementById("dashboard-data").textContent);
const { Chart } = window;

const STATUS_COLORS = {
  COMPLETED: "#2e7d32",
  ERROR: "#c62828",
  CANCELLED: "#8d6e63",
  PAUSED: "#f9a825",
  RUNNING: "#1565c0",
  PENDING: "#7e57c2",
  REGENERATED: "#90a4ae",
};

const css = getComputedStyle(document.documentElement);
Chart.defaults.color = css.getPropertyValue("--body-quiet-color").trim() || "#666";
Chart.defaults.borderColor = css.getPropertyValue("--hairline-color").trim() || "#ddd";
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.animation = matchMedia("(prefers-reduced-motion: reduce)").matches ? false : { duration: 300 };

const labels = data.labels.map((day) => day.slice(5)); // MM-DD
const canvas = (id) => document.getElementById(id);

// Statuses that never happened in the period would only clutter the legend.
const statuses = Object.entries(data.runsByStatus).filter(([, counts]) => counts.some(Boolean));

new Chart(canvas("chart-runs"), {
  type: "bar",
  data: {
    labels,
    datasets: statuses.map(([status, counts]) => ({ label: status, data: counts, backgroundColor: STATUS_COLORS[status] || "#999", stack: "runs" })),
  },
  options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } }, plugins: { tooltip: { mode: "index", intersect: false } } },
});

new Chart(canvas("chart-tokens"), {
  type: "bar",
  data: {
    labels,
    datasets: [
      { label: "input", data: data.tokens.input, backgroundColor: "#42a5f5", stack: "tokens" },
      { label: "output", data: data.tokens.output, backgroundColor: "#ab47bc", stack: "tokens" },
    ],
  },
  options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } }, plugins: { tooltip: { mode: "index", intersect: false } } },
});

new Chart(canvas("chart-duration"), {
  type: "line",
  data: {
    labels,
    datasets: [
      { label: "p50 (s)", data: data.durationP50, borderColor: "#1565c0", backgroundColor: "#1565c0", spanGaps: true, tension: 0.2 },
      { label: "p95 (s)", data: data.durationP95, borderColor: "#ef6c00", backgroundColor: "#ef6c00", spanGaps: true, tension: 0.2 },
    ],
  },
  options: { scales: { y: { beginAtZero: true, title: { display: true, text: "seconds" } } }, plugins: { tooltip: { mode: "index", intersect: false } } },
});

new Chart(canvas("chart-errors"), {
  type: "line",
  data: {
    labels,
    datasets: [{
      label: "error rate",
      data: data.errorRate.map((rate) => (rate === null ? null : Math.round(rate * 1000) / 10)),
      borderColor: "#c62828",
      backgroundColor: "rgba(198, 40, 40, 0.15)",
      fill: true,
      spanGaps: true,
      tension: 0.2,
    }],
  },
  options: {
    scales: { y: { beginAtZero: true, suggestedMax: 10, title: { display: true, text: "% of finished runs" }, ticks: { callback: (value) => `${value}%` } } },
    plugins: {
      legend: { display: false },
      // The denominator, said: "25% (1 failed of 4 finished runs)".
      tooltip: { callbacks: { label: (item) => `${item.formattedValue}% (${data.errors[item.dataIndex]} failed of ${data.finished[item.dataIndex]} finished runs)` } },
    },
  },
});

new Chart(canvas("chart-queue"), {
  type: "bar",
  data: {
    labels: ["pending", "running", "paused"],
    datasets: [{ label: "runs", data: [data.queue.pending, data.queue.running, data.queue.paused], backgroundColor: [STATUS_COLORS.PENDING, STATUS_COLORS.RUNNING, STATUS_COLORS.PAUSED] }],
  },
  options: { indexAxis: "y", scales: { x: { beginAtZero: true, ticks: { precision: 0 } } }, plugins: { legend: { display: false } } },
});

new Chart(canvas("chart-agents"), {
  type: "bar",
  data: {
    labels: data.busiestAgents.map((row) => row.agent),
    datasets: [
      { label: "runs", data: data.busiestAgents.map((row) => row.runs), backgroundColor: "#1565c0" },
      { label: "errors", data: data.busiestAgents.map((row) => row.errors), backgroundColor: "#c62828" },
    ],
  },
  options: { indexAxis: "y", scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
});

// The metrics tables' series (metrics/): runs, tokens, latency, per model, per agent.
const usage = data.usage;
if (usage) {
  const usageLabels = usage.labels.map((day) => day.slice(5));
  new Chart(canvas("chart-usage-runs"), {
    type: "bar",
    data: {
      labels: usageLabels,
      datasets: [
        { label: "agent runs", data: usage.runs.agent, backgroundColor: "#1565c0", stack: "runs" },
        { label: "team runs", data: usage.runs.team, backgroundColor: "#00897b", stack: "runs" },
        { label: "workflow runs", data: usage.runs.workflow, backgroundColor: "#6d4c41", stack: "runs" },
        { label: "errors", data: usage.errors, backgroundColor: STATUS_COLORS.ERROR, stack: "errors" },
      ],
    },
    options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } }, plugins: { tooltip: { mode: "index", intersect: false } } },
  });
  new Chart(canvas("chart-usage-tokens"), {
    type: "bar",
    data: {
      labels: usageLabels,
      datasets: [
        { label: "input", data: usage.tokens.input, backgroundColor: "#42a5f5", stack: "tokens" },
        { label: "output", data: usage.tokens.output, backgroundColor: "#ab47bc", stack: "tokens" },
      ],
    },
    options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } }, plugins: { tooltip: { mode: "index", intersect: false } } },
  });
  new Chart(canvas("chart-usage-latency"), {
    type: "line",
    data: {
      labels: usageLabels,
      datasets: [
        { label: "p50 (s)", data: usage.p50, borderColor: "#1565c0", backgroundColor: "#1565c0", spanGaps: true, tension: 0.2 },
        { label: "p95 (s)", data: usage.p95, borderColor: "#ef6c00", backgroundColor: "#ef6c00", spanGaps: true, tension: 0.2 },
      ],
    },
    options: { scales: { y: { beginAtZero: true, title: { display: true, text: "seconds" } } }, plugins: { tooltip: { mode: "index", intersect: false } } },
  });
  new Chart(canvas("chart-usage-models"), {
    type: "bar",
    data: {
      labels: usage.models.map((row) => (row.model_provider ? `${row.model_id} (${row.model_provider})` : row.model_id)),
      datasets: [
        { label: "runs", data: usage.models.map((row) => row.count), backgroundColor: "#1565c0", xAxisID: "x" },
        { label: "tokens", data: usage.models.map((row) => row.total_tokens), backgroundColor: "#ab47bc", xAxisID: "x2" },
      ],
    },
    options: { indexAxis: "y", scales: { x: { beginAtZero: true, position: "bottom", ticks: { precision: 0 } }, x2: { beginAtZero: true, position: "top", grid: { drawOnChartArea: false } } } },
  });
  new Chart(canvas("chart-usage-agents"), {
    type: "bar",
    data: {
      labels: usage.agents.map((row) => `${row.component_id || "(none)"} · ${row.component_type}`),
      datasets: [
        { label: "runs", data: usage.agents.map((row) => row.runs), backgroundColor: "#1565c0" },
        { label: "errors", data: usage.agents.map((row) => row.errors), backgroundColor: STATUS_COLORS.ERROR },
      ],
    },
    options: { indexAxis: "y", scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
  });
}

document.body.dataset.chartsReady = "true";

// A metrics refresh runs as a background job: while it does, follow its status and progress, and
// redraw the page with the new rows once it ends.
const refreshStatus = document.getElementById("metrics-refresh-status");
if (refreshStatus && refreshStatus.dataset.status === "running") {
  const bar = document.getElementById("metrics-refresh-progress");
  const button = document.getElementById("metrics-refresh");
  const errorText = document.getElementById("metrics-refresh-error");
  button.disabled = true;
  const follow = async () => {
    let body;
    try {
      const response = await fetch(refreshStatus.dataset.url, { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      body = await response.json();
    } catch {
      setTimeout(follow, 5000); // the server restarting, say: try again a little later
      return;
    }
    const { months_done: done, months_total: total } = body.progress || {};
    refreshStatus.dataset.status = body.status;
    refreshStatus.textContent = total ? `${body.status} (month ${done} of ${total})` : body.status;
    if (total) {
      bar.max = total;
      bar.value = done;
    }
    if (body.status === "running") {
      setTimeout(follow, 2000);
    } else if (body.status === "completed") {
      window.location.reload();
    } else {
      bar.hidden = true;
      button.disabled = false;
      errorText.textContent = body.error ? ` (${body.error})` : "";
    }
  };
  setTimeout(follow, 1000);
}
