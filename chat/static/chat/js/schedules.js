// My schedules: the signed-in user's cron runs through the /schedules API (a browser user sees
// only their own): create one with a cron helper (the next five fire times in the chosen time
// zone, computed by the server's own cron parser), enable or disable it, fire it now, and read
// its history, each fire linking to the conversation its run made.
import { ApiError, getJSON, query, request } from "./api.js";
import { el, when } from "./render.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const $ = (id) => document.getElementById(id);
const ui = {
  notice: $("schedules-notice"), form: $("schedule-form"), name: $("schedule-name"), agent: $("schedule-agent"),
  message: $("schedule-message"), cron: $("schedule-cron"), zone: $("schedule-timezone"), zones: $("timezones"),
  next: $("cron-next"), cronError: $("cron-error"), cronZone: $("cron-zone"), create: $("schedule-create"),
  list: $("schedules-list"), empty: $("schedules-empty"), count: $("schedules-count"),
};
const enc = encodeURIComponent;
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const STATUS = { success: "Done", failed: "Failed", running: "Running", pending: "Waiting to retry", paused: "Paused", cancelled: "Cancelled" };

function showNotice(error, kind = "error") {
  const message = error instanceof ApiError ? error.message : typeof error === "string" ? error : "Something unexpected happened in the page. Reload it and try again.";
  ui.notice.replaceChildren(el("span", { text: message }));
  ui.notice.dataset.kind = kind;
  ui.notice.hidden = false;
}

function inZone(iso, zone) {
  try {
    return new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "short", timeZone: zone }).format(new Date(iso));
  } catch {
    return iso;
  }
}

// ---- the cron helper ------------------------------------------------------------------------

let previewTimer = 0;
let previewSeq = 0;

async function preview() {
  const seq = ++previewSeq;
  const zone = ui.zone.value.trim() || "UTC";
  ui.cronZone.textContent = `(${zone})`;
  try {
    const body = await getJSON(query("/chat/api/schedules/preview", { cron_expr: ui.cron.value.trim(), timezone: zone }));
    if (seq !== previewSeq) return;
    ui.next.replaceChildren(...body.next.map((iso) => el("li", { text: inZone(iso, zone) })));
    ui.cronError.hidden = true;
    ui.create.disabled = false;
  } catch (error) {
    if (seq !== previewSeq) return;
    ui.next.replaceChildren();
    ui.cronError.textContent = error instanceof ApiError ? error.message : String(error);
    ui.cronError.hidden = false;
    ui.create.disabled = true;
  }
}

function schedulePreview() {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(preview, 250);
}

// ---- the list -------------------------------------------------------------------------------

function agentOf(schedule) {
  return schedule.target_id ? `${schedule.target_type || "agent"} ${schedule.target_id}` : schedule.endpoint;
}

function historyItem(run) {
  const status = STATUS[run.status] || run.status;
  const parts = [el("time", { text: when(run.triggered_at) }), ` · ${status}`];
  if (run.attempt > 1) parts.push(` (attempt ${run.attempt})`);
  if (run.session_id) parts.push(" · ", el("a", { href: `${config.sessionUrl}${enc(run.session_id)}/`, text: "open the conversation" }));
  if (run.error) parts.push(el("span", { class: "muted", text: ` · ${run.error.slice(0, 160)}` }));
  return el("li", { "data-status": run.status, "data-run-id": run.run_id || "" }, ...parts);
}

async function showHistory(schedule, target) {
  const body = await getJSON(query(`/schedules/${enc(schedule.id)}/runs`, { limit: 10, page: 1 }));
  target.replaceChildren(...(body.data.length ? body.data.map(historyItem) : [el("li", { class: "muted", text: "Not run yet." })]));
}

async function act(schedule, action) {
  try {
    await request("POST", `/schedules/${enc(schedule.id)}/${action}`, { json: {} });
    if (action === "trigger") showNotice(`“${schedule.name}” is running now; its conversation appears in its history.`, "info");
    await refresh();
  } catch (error) {
    showNotice(error);
  }
}

async function remove(schedule) {
  if (!window.confirm(`Delete “${schedule.name}” and its history?`)) return;
  try {
    await request("DELETE", `/schedules/${enc(schedule.id)}`);
    await refresh();
  } catch (error) {
    showNotice(error);
  }
}

function item(schedule) {
  const state = schedule.enabled ? "enabled" : "disabled";
  const status = el("span", { class: "inbox-status", "data-status": state, text: schedule.enabled ? "On" : "Off" });
  const head = el("p", { class: "inbox-title" }, el("span", { text: schedule.name }), " ", status);
  const what = el("p", { class: "inbox-args", text: `${agentOf(schedule)}: “${(schedule.payload && schedule.payload.message) || ""}”` });
  const cron = el("p", { class: "inbox-meta muted small" },
    el("span", { class: "schedule-cron", text: schedule.cron_expr || "on demand" }), ` · ${schedule.timezone}`,
    schedule.next_run_at ? ` · next ${inZone(new Date(schedule.next_run_at * 1000).toISOString(), schedule.timezone)}` : "",
  );
  const reason = schedule.disabled_reason ? el("p", { class: "inbox-outcome small", text: `Disabled: ${schedule.disabled_reason}` }) : null;
  const history = el("ul", { class: "schedule-history", "aria-label": `History of ${schedule.name}` });
  const actions = el("div", { class: "schedule-actions" },
    el("button", { class: "btn", type: "button", "data-action": schedule.enabled ? "disable" : "enable", text: schedule.enabled ? "Disable" : "Enable", onclick: () => act(schedule, schedule.enabled ? "disable" : "enable") }),
    schedule.enabled ? el("button", { class: "btn", type: "button", "data-action": "trigger", text: "Run now", onclick: () => act(schedule, "trigger") }) : null,
    el("button", { class: "btn btn-link", type: "button", "data-action": "delete", text: "Delete", onclick: () => remove(schedule) }),
  );
  showHistory(schedule, history).catch(() => history.replaceChildren(el("li", { class: "muted", text: "History unavailable." })));
  return el("li", { class: "inbox-item", "data-schedule-id": schedule.id, "data-enabled": String(schedule.enabled) }, head, what, cron, reason, actions, history);
}

async function refresh() {
  const body = await getJSON(query("/schedules", { limit: 100, page: 1 }));
  const schedules = body.data || [];
  ui.list.replaceChildren(...schedules.map(item));
  ui.empty.hidden = schedules.length > 0;
  const on = schedules.filter((one) => one.enabled).length;
  ui.count.textContent = schedules.length ? `${on} on · ${schedules.length - on} off` : "";
}

async function loadAgents() {
  const [agents, teams] = await Promise.all([getJSON("/agents"), getJSON("/teams").catch(() => [])]);
  const options = [
    ...agents.map((agent) => el("option", { value: `/agents/${enc(agent.id)}/runs`, text: agent.name || agent.id })),
    ...teams.map((team) => el("option", { value: `/teams/${enc(team.id)}/runs`, text: `${team.name || team.id} (team)` })),
  ];
  ui.agent.replaceChildren(...options);
}

async function create(event) {
  event.preventDefault();
  ui.create.disabled = true;
  try {
    await request("POST", "/schedules", {
      json: {
        name: ui.name.value.trim(), endpoint: ui.agent.value, cron_expr: ui.cron.value.trim(),
        timezone: ui.zone.value.trim() || "UTC", payload: { message: ui.message.value },
      },
    });
    ui.name.value = "";
    ui.message.value = "";
    ui.notice.hidden = true;
    await refresh();
  } catch (error) {
    showNotice(error);
  } finally {
    ui.create.disabled = false;
  }
}

function fillZones() {
  const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [browserZone, "UTC"];
  ui.zones.replaceChildren(...zones.map((zone) => el("option", { value: zone })));
  ui.zone.value = browserZone;
}

fillZones();
ui.cron.addEventListener("input", schedulePreview);
ui.zone.addEventListener("input", schedulePreview);
ui.form.addEventListener("submit", create);
Promise.all([loadAgents(), refresh(), preview()])
  .catch(showNotice)
  .finally(() => {
    document.body.dataset.ready = "true";
  });
