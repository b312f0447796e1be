// A trace's spans as a waterfall: one horizontal bar per span, from its start to its end in
// milliseconds since the trace began (Chart.js floating bars), coloured by span type.
const data = JSON.parse(document.getElementById("trace-waterfall").textContent);
const COLOURS = { AGENT: "#417690", TEAM: "#5b6abf", WORKFLOW: "#2f7d6d", STEP: "#79aec8", LLM: "#e0a526", TOOL: "#8a5a9e", CHAIN: "#9aa5ad" };

function draw() {
  const canvas = document.getElementById("trace-waterfall-chart");
  if (!canvas || !window.Chart || !data.bars.length) return;
  const box = document.getElementById("trace-waterfall-box");
  box.style.height = `${Math.max(160, 28 * data.bars.length + 60)}px`;
  new window.Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: [{
        label: "span",
        data: data.bars,
        backgroundColor: data.types.map((type, i) => (data.statuses[i] === "ERROR" ? "#ba2121" : COLOURS[type] || "#9aa5ad")),
        borderSkipped: false,
        barPercentage: 0.8,
      }],
    },
    options: {
      indexAxis: "y",
      maintainAspectRatio: false,
      animation: false,
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            label: (item) => `${data.types[item.dataIndex]} · ${data.durations[item.dataIndex]} · starts at ${data.bars[item.dataIndex][0]} ms`,
          },
        },
      },
      scales: {
        x: { title: { display: true, text: "milliseconds since the trace began" }, beginAtZero: true },
        y: { ticks: { autoSkip: false } },
      },
    },
  });
}

draw();
