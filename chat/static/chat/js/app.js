// The chat page: agent picker, the user's sessions, and runs streamed from the AgentOS API.
import { ApiError, makeApi } from "./api.js";
import { readEventStream } from "./sse.js";
import { AssistantTurn, el, needsDecision, userTurn } from "./render.js";
import { renderFeedback } from "./feedback.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const api = makeApi(config.user);
const $ = (id) => document.getElementById(id);

const ui = {
  app: $("app"),
  sidebar: $("sidebar"),
  scrim: $("scrim"),
  toggle: $("sidebar-toggle"),
  newChat: $("new-chat"),
  search: $("session-search"),
  list: $("session-list"),
  more: $("more-sessions"),
  empty: $("sessions-empty"),
  picker: $("agent-picker"),
  badge: $("model-badge"),
  title: $("session-title"),
  notice: $("notice"),
  messages: $("messages"),
  welcome: $("welcome"),
  form: $("composer"),
  input: $("composer-input"),
  send: $("send"),
  stop: $("stop"),
  live: $("live-status"),
  renameDialog: $("rename-dialog"),
  renameInput: $("rename-input"),
  deleteDialog: $("delete-dialog"),
  deleteName: $("delete-name"),
};

const state = {
  agents: new Map(),
  agentId: null,
  sessionId: null,
  sessionName: "",
  sessions: [],
  page: 1,
  totalPages: 1,
  search: "",
  run: null, // the run this page is streaming: {agentId, runId, sessionId, controller, turn, ...}
  loadToken: 0,
};

const TERMINAL = new Set(["RunCompleted", "RunError", "RunCancelled", "RunPaused"]);
const AGENT_KEY = "agno-site.chat.agent";

// ---- small helpers -------------------------------------------------------------------------

function announce(text) {
  ui.live.textContent = "";
  requestAnimationFrame(() => (ui.live.textContent = text));
}

function showNotice(message, { action } = {}) {
  ui.notice.replaceChildren(el("span", { text: message }));
  if (action) ui.notice.append(" ", action);
  ui.notice.append(el("button", { type: "button", class: "notice-close", "aria-label": "Dismiss", onclick: hideNotice }, "×"));
  ui.notice.hidden = false;
}

function hideNotice() {
  ui.notice.hidden = true;
  ui.notice.replaceChildren();
}

function failureMessage(error) {
  if (error instanceof ApiError) {
    if (error.status === 401 || error.status === 403) {
      return { text: error.message, action: el("a", { href: `${config.loginUrl}?next=${encodeURIComponent(location.pathname)}`, text: "Sign in" }) };
    }
    return { text: error.message };
  }
  return { text: "Something unexpected happened in the page. Reload it and try again." };
}

function report(error) {
  if (error && error.name === "AbortError") return;
  console.error(error);
  const { text, action } = failureMessage(error);
  showNotice(text, { action });
}

function scrollToEnd(force = false) {
  const box = ui.messages;
  const nearBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 160;
  if (force || nearBottom) box.scrollTop = box.scrollHeight;
}

const PENCIL = "M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4";
const TRASH = "M5 7h14M10 7V4h4v3M7 7l1 13h8l1-13";

function icon(path) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("fill", "none");
  svg.setAttribute("stroke", "currentColor");
  svg.setAttribute("stroke-width", "2");
  svg.setAttribute("stroke-linecap", "round");
  svg.setAttribute("stroke-linejoin", "round");
  const line = document.createElementNS("http://www.w3.org/2000/svg", "path");
  line.setAttribute("d", path);
  svg.append(line);
  return svg;
}

function relativeTime(iso) {
  if (!iso) return "";
  const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}

function setRunning(running) {
  ui.send.hidden = running;
  ui.stop.hidden = !running;
  ui.stop.disabled = false;
  ui.input.disabled = false;
  ui.picker.disabled = running;
  ui.newChat.disabled = running;
  document.body.classList.toggle("is-running", running);
}

function agentName(agentId) {
  return state.agents.get(agentId)?.name || agentId || "Agent";
}

// ---- agents -------------------------------------------------------------------------------

async function loadAgents() {
  const agents = await api.agents();
  state.agents = new Map(agents.map((agent) => [agent.id, agent]));
  ui.picker.replaceChildren(...agents.map((agent) => el("option", { value: agent.id, text: agent.name || agent.id })));
  if (!agents.length) {
    ui.picker.append(el("option", { value: "", text: "No agents available" }));
    ui.picker.disabled = true;
    showNotice("There are no agents you can talk to yet. Ask an operator to publish one.");
    return;
  }
  const remembered = localStorage.getItem(AGENT_KEY);
  selectAgent(state.agents.has(remembered) ? remembered : agents[0].id);
}

function selectAgent(agentId) {
  state.agentId = agentId;
  ui.picker.value = agentId;
  const agent = state.agents.get(agentId);
  const model = agent?.model || {};
  ui.badge.hidden = !agent;
  if (agent) {
    const offline = String(model.provider || "").toLowerCase() === "offline";
    ui.badge.textContent = offline ? "Offline demo model" : [model.provider, model.model || model.id].filter(Boolean).join(" · ");
    ui.badge.classList.toggle("badge-offline", offline);
    ui.badge.title = offline ? "Answers come from the built-in offline model: deterministic, no AI provider is called." : "";
  }
  const welcomeName = $("welcome-agent");
  if (welcomeName) welcomeName.textContent = agent ? agent.name : "an agent";
  const welcomeText = $("welcome-description");
  if (welcomeText) welcomeText.textContent = agent?.description || "";
  ui.input.disabled = !agent;
  ui.send.disabled = !agent;
}

// ---- the sessions sidebar ----------------------------------------------------------------

async function loadSessions({ append = false } = {}) {
  const page = append ? state.page + 1 : 1;
  const result = await api.sessions({ page, name: state.search });
  state.page = page;
  state.totalPages = result.meta?.total_pages || 1;
  state.sessions = append ? state.sessions.concat(result.data) : result.data;
  renderSessions();
}

function renderSessions() {
  ui.list.replaceChildren(...state.sessions.map(sessionItem));
  ui.more.hidden = state.page >= state.totalPages;
  ui.empty.hidden = state.sessions.length > 0;
  ui.empty.textContent = state.search ? "No conversations match your search." : "No conversations yet.";
}

function sessionItem(session) {
  const name = session.session_name || "Untitled conversation";
  const current = session.session_id === state.sessionId;
  const open = el("a", {
    class: "session-open",
    href: `${config.sessionUrl}${encodeURIComponent(session.session_id)}/`,
    "aria-current": current ? "page" : undefined,
    onclick: (event) => {
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      openSession(session.session_id, { push: true });
    },
  },
  el("span", { class: "session-name", text: name }),
  el("span", { class: "session-meta", text: [agentName(session.agent_id), relativeTime(session.updated_at || session.created_at)].filter(Boolean).join(" · ") }));
  const rename = el("button", { type: "button", class: "icon-btn", "aria-label": `Rename “${name}”`, title: "Rename", onclick: () => askRename(session) }, icon(PENCIL));
  const remove = el("button", { type: "button", class: "icon-btn", "aria-label": `Delete “${name}”`, title: "Delete", onclick: () => askDelete(session) }, icon(TRASH));
  return el("li", { class: `session${current ? " is-current" : ""}`, "data-session-id": session.session_id }, open, el("div", { class: "session-actions" }, rename, remove));
}

function askRename(session) {
  ui.renameInput.value = session.session_name || "";
  ui.renameDialog.returnValue = "";
  ui.renameDialog.onclose = async () => {
    const name = ui.renameInput.value.trim();
    if (ui.renameDialog.returnValue !== "save" || !name || name === session.session_name) return;
    try {
      await api.renameSession(session.session_id, name);
      session.session_name = name;
      if (session.session_id === state.sessionId) setTitle(name);
      renderSessions();
      announce(`Renamed to ${name}`);
    } catch (error) {
      report(error);
    }
  };
  ui.renameDialog.showModal();
  ui.renameInput.select();
}

function askDelete(session) {
  ui.deleteName.textContent = session.session_name || "Untitled conversation";
  ui.deleteDialog.returnValue = "";
  ui.deleteDialog.onclose = async () => {
    if (ui.deleteDialog.returnValue !== "delete") return;
    try {
      await api.deleteSession(session.session_id);
      state.sessions = state.sessions.filter((one) => one.session_id !== session.session_id);
      renderSessions();
      if (session.session_id === state.sessionId) newChat({ push: true });
      announce("Conversation deleted");
    } catch (error) {
      report(error);
    }
  };
  ui.deleteDialog.showModal();
}

function markCurrentSession() {
  for (const item of ui.list.children) {
    const current = item.dataset.sessionId === state.sessionId;
    item.classList.toggle("is-current", current);
    const link = item.querySelector(".session-open");
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// ---- opening a conversation ----------------------------------------------------------------

function setTitle(name) {
  state.sessionName = name || "";
  ui.title.textContent = name || "New chat";
  document.title = `${name || "New chat"} · ${document.body.dataset.siteName}`;
}

function clearMessages() {
  ui.messages.replaceChildren(ui.welcome);
  ui.welcome.hidden = false;
  regenerable = null;
}

function newChat({ push = false } = {}) {
  if (state.run) return;
  state.loadToken += 1;
  state.sessionId = null;
  setTitle("");
  clearMessages();
  hideNotice();
  markCurrentSession();
  if (push) history.pushState({ sessionId: null }, "", config.chatUrl);
  closeSidebar();
  ui.input.focus();
}

async function openSession(sessionId, { push = false } = {}) {
  if (state.run) return;
  const token = ++state.loadToken;
  state.sessionId = sessionId;
  hideNotice();
  markCurrentSession();
  closeSidebar();
  if (push) history.pushState({ sessionId }, "", `${config.sessionUrl}${encodeURIComponent(sessionId)}/`);
  const known = state.sessions.find((one) => one.session_id === sessionId);
  setTitle(known?.session_name || "");
  clearMessages();
  ui.welcome.hidden = true;
  ui.messages.append(el("p", { class: "loading", text: "Loading the conversation…" }));
  let runs;
  try {
    runs = await api.sessionRuns(sessionId);
  } catch (error) {
    if (token !== state.loadToken) return;
    clearMessages();
    report(error);
    return;
  }
  if (token !== state.loadToken) return; // the user opened something else meanwhile
  clearMessages();
  ui.welcome.hidden = runs.length > 0;
  const agentId = known?.agent_id || runs.find((run) => run.agent_id)?.agent_id;
  if (agentId && state.agents.has(agentId)) selectAgent(agentId);
  else if (agentId) showNotice("The agent of this conversation is not available any more; you can read it, but not continue it.");
  renderHistory(runs);
  scrollToEnd(true);
}

function renderHistory(runs) {
  // Team member runs are shown through their team's run, not on their own; a regenerated answer
  // gave way to the one that replaced it.
  const top = runs.filter((run) => !run.parent_run_id && run.status !== "REGENERATED");
  top.forEach((run, index) => {
    ui.messages.append(userTurn(run.run_input || ""));
    const turn = new AssistantTurn(agentName(run.agent_id));
    ui.messages.append(turn.el);
    for (const tool of run.tools || []) {
      if (!needsDecision(tool)) turn.toolFinished(tool);
    }
    const status = run.status;
    if (status === "RUNNING" || status === "PENDING") {
      // A run still executing on the server (a background run, or one left by a reload): follow it.
      resumeRun({ agentId: run.agent_id, runId: run.run_id, sessionId: state.sessionId, turn });
      return;
    }
    if (status === "ERROR") turn.error(plainContent(run.content) || "The agent could not finish this reply.");
    else turn.setFinalText(run.content);
    if (status === "CANCELLED") turn.note("Stopped before it finished.", "stopped");
    if (status === "COMPLETED" && index === top.length - 1) offerRegenerate(turn, run.agent_id, run.run_id, state.sessionId);
    renderFeedback(turn.el, { ...run, session_id: state.sessionId });
    if (status === "PAUSED") {
      turn.onDecided = (tools, panel) => continueRun({ agentId: run.agent_id, runId: run.run_id, sessionId: state.sessionId, turn, tools, panel });
      turn.paused(run.tools || []);
    }
    turn.closeSegment();
  });
}

function plainContent(content) {
  if (content === null || content === undefined) return "";
  return typeof content === "string" ? content : JSON.stringify(content);
}

// ---- runs: start, continue, resume, stop ----------------------------------------------------

/** Apply one stream frame to the turn; returns the terminal event name when the run ended. */
function applyFrame(run, frame) {
  const { event, data } = frame;
  const turn = run.turn;
  if (typeof data.event_index === "number") run.lastEventIndex = data.event_index;
  if (data.parent_run_id && data.run_id !== run.runId && run.runId) return null; // a member's events
  switch (event) {
    case "RunStarted":
    case "RunContinued":
      run.runId = data.run_id || run.runId;
      if (data.session_id && !run.sessionId) run.sessionId = data.session_id;
      if (run.newSession && run.sessionId && !run.addressed) {
        // A background run's session exists from the moment it is accepted: give it its URL now,
        // so a reload comes back to it and follows the run.
        run.addressed = true;
        state.sessionId = run.sessionId;
        history.replaceState({ sessionId: run.sessionId }, "", `${config.sessionUrl}${encodeURIComponent(run.sessionId)}/`);
      }
      turn.setBusy(true);
      return null;
    case "RunContent":
      if (typeof data.content === "string") turn.appendText(data.content);
      else if (data.content) turn.setFinalText(data.content);
      scrollToEnd();
      return null;
    case "ToolCallStarted":
      if (data.tool) turn.toolStarted(data.tool);
      scrollToEnd();
      return null;
    case "ToolCallCompleted":
      if (data.tool) turn.toolFinished(data.tool);
      return null;
    case "ToolCallError":
      if (data.tool) turn.toolFinished(data.tool, data.error || "The tool failed.");
      return null;
    case "RunCompleted":
      if (run.cancelled) return "RunCancelled"; // AgentOS sends RunCompleted after RunCancelled
      turn.setFinalText(data.content);
      return event;
    case "RunError":
      turn.error(plainContent(data.content) || "The agent could not finish this reply.");
      return event;
    case "RunCancelled":
      run.cancelled = true;
      turn.setFinalText(data.content);
      turn.note("Stopped.", "stopped");
      return event;
    case "RunPaused":
      turn.setFinalText(data.content);
      turn.onDecided = (tools, panel) => continueRun({ agentId: run.agentId, runId: run.runId, sessionId: run.sessionId, turn, tools, panel });
      // Enabled once the stream has closed: by then the paused run is recorded and can be continued.
      turn.paused(data.tools || [], { disabled: true });
      scrollToEnd(true);
      announce("The agent is waiting for your approval.");
      return event;
    case "CustomEvent":
      // A background run executed again after its worker was lost: one answer, the new one.
      if (data.name === "RunAttemptStarted" && run.attemptMark) turn.restart(run.attemptMark);
      return null;
    case "error":
      turn.error(data.error || "The reply stream failed.");
      return "error";
    case "replay":
    case "catch_up":
    case "subscribed":
    case "stream_expired":
      return null;
    default:
      return null; // ModelRequest*, Memory*, Reasoning*…: nothing to show
  }
}

/** Read a run's event stream into its turn, whatever started it (new run, continue, resume). */
async function streamRun(run, open) {
  state.run = run;
  run.controller = new AbortController();
  run.lastEventIndex = run.lastEventIndex ?? -1;
  run.attemptMark = run.attemptMark ?? run.turn.checkpoint(); // kept across reconnects
  setRunning(true);
  run.turn.setBusy(true, run.busyLabel || "");
  let terminal = null;
  try {
    const response = await open(run.controller.signal);
    await readEventStream(response, (frame) => {
      const end = applyFrame(run, frame);
      if (end) terminal = end;
    });
    if (!terminal) {
      if (run.stopping) {
        terminal = "RunCancelled";
        run.turn.note("Stopped.", "stopped");
      } else if (run.runId && run.sessionId && (run.reconnects || 0) < 5) {
        // The run goes on on the server: pick the stream up where it broke.
        run.reconnects = (run.reconnects || 0) + 1;
        await new Promise((resolve) => setTimeout(resolve, 500 * run.reconnects));
        state.run = null;
        return streamRun(run, (signal) => api.resumeRun(run.agentId, run.runId, { sessionId: run.sessionId, lastEventIndex: run.lastEventIndex }, signal));
      } else {
        run.turn.error("The connection closed before the reply finished. Reload the page to see where it got to.");
      }
    }
  } catch (error) {
    if (error && error.name === "AbortError") {
      terminal = "RunCancelled";
      if (!run.cancelled) run.turn.note("Stopped.", "stopped");
    } else if (error instanceof ApiError && error.status === 409 && run.kind === "continue" && !run.conflict) {
      run.conflict = true; // continueRun retries without background
    } else if (error instanceof ApiError) {
      run.turn.error(error.message);
      if (error.status === 401 || error.status === 403) report(error);
    } else {
      console.error(error);
      run.turn.error("The connection to the server was lost. Check your connection, then reload the page.");
    }
  } finally {
    clearTimeout(run.stopTimer);
    run.turn.closeSegment();
    run.turn.setBusy(false);
    state.run = null;
    setRunning(false);
  }
  await afterRun(run, terminal);
  return terminal;
}

async function afterRun(run, terminal) {
  if (terminal === "RunCompleted" && run.runId) offerRegenerate(run.turn, run.agentId, run.runId, run.sessionId);
  if (terminal === "RunCompleted") renderFeedback(run.turn.el, run);
  const labels = { RunCompleted: "Reply complete.", RunError: "The reply failed.", RunCancelled: "Stopped.", RunPaused: "Waiting for your approval." };
  if (terminal) announce(labels[terminal] || "");
  if (run.sessionId && run.sessionId !== state.sessionId && run.newSession) {
    state.sessionId = run.sessionId;
  }
  if (run.newSession && run.sessionId && state.sessionId === run.sessionId) {
    // The session exists on the server once its first run is recorded: give it its own URL.
    if (terminal === "RunCancelled") await waitForRecord(run);
    history.replaceState({ sessionId: run.sessionId }, "", `${config.sessionUrl}${encodeURIComponent(run.sessionId)}/`);
  }
  try {
    await loadSessions();
    const current = state.sessions.find((one) => one.session_id === state.sessionId);
    if (current) setTitle(current.session_name);
    markCurrentSession();
  } catch (error) {
    report(error);
  }
  if (terminal === "RunPaused") setPanelEnabled(run.turn.el, true);
  // Keyboard users land on the decision the run waits for, everyone else back in the composer.
  const decision = terminal === "RunPaused" ? run.turn.el.querySelector(".approval:not(.is-sent) button, .approval:not(.is-sent) input") : null;
  (decision || ui.input).focus();
}

// A stopped stream is recorded by the server a moment after the connection closes.
async function waitForRecord(run) {
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      await api.run(run.agentId, run.runId, run.sessionId);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function sendMessage(text) {
  const message = text.trim();
  if (!message || state.run || !state.agentId) return;
  clearRegenerate();
  hideNotice();
  ui.welcome.hidden = true;
  ui.messages.append(userTurn(message));
  const turn = new AssistantTurn(agentName(state.agentId));
  ui.messages.append(turn.el);
  scrollToEnd(true);
  ui.input.value = "";
  autosize();
  announce(`${agentName(state.agentId)} is replying.`);
  const run = { agentId: state.agentId, sessionId: state.sessionId, newSession: !state.sessionId, turn };
  if (run.newSession) setTitle(message.slice(0, 80));
  await streamRun(run, (signal) => api.startRun(run.agentId, { message, sessionId: run.sessionId }, signal));
}

function setPanelEnabled(root, enabled) {
  for (const node of root.querySelectorAll(".approval:not(.is-sent) :is(button, input, textarea)")) node.disabled = !enabled;
}

async function continueRun({ agentId, runId, sessionId, turn, tools, panel }) {
  if (state.run) {
    showNotice("Wait for the current reply to finish, then decide.");
    if (panel) setPanelEnabled(panel.parentElement, true);
    return;
  }
  const approved = tools.filter(needsDecision).length === 0 && tools.some((tool) => tool.confirmed === true || tool.answered || tool.result);
  panel?.classList.add("is-sent");
  const rejected = tools.some((tool) => tool.confirmed === false);
  panel?.append(el("p", { class: "approval-outcome", text: rejected ? "You rejected this." : approved ? "You approved this." : "Sent." }));
  // A rejected call never runs, so the stream has no event for it: show its card here.
  for (const tool of tools) if (tool.confirmed === false) turn.toolFinished(tool);
  const run = { agentId, runId, sessionId, newSession: false, turn, busyLabel: "", kind: "continue" };
  let terminal = await streamRun(run, (signal) => api.continueRun(agentId, runId, { sessionId, tools }, signal));
  if (!terminal && run.conflict) {
    // Paused by a run that was not started in the background (an API client's): continue it inline.
    terminal = await streamRun(run, (signal) => api.continueRun(agentId, runId, { sessionId, tools, background: false }, signal));
  }
  if (!terminal && panel) {
    // The continuation never started (a network failure, a 409): let the person decide again.
    panel.classList.remove("is-sent");
    panel.querySelector(".approval-outcome")?.remove();
    panel.querySelectorAll(".is-decided").forEach((item) => item.classList.remove("is-decided"));
    setPanelEnabled(panel.parentElement, true);
  }
}

// ---- regenerate: the last answer again -------------------------------------------------------

let regenerable = null; // the last finished reply, the only one that can be answered again

function offerRegenerate(turn, agentId, runId, sessionId) {
  clearRegenerate();
  if (!agentId || !state.agents.has(agentId) || !sessionId) return;
  regenerable = { turn, agentId, runId, sessionId };
  turn.offerAction("Regenerate", () => regenerate(regenerable), { title: "Answer the last message again" });
}

function clearRegenerate() {
  regenerable?.turn.clearActions();
  regenerable = null;
}

async function regenerate(source) {
  if (!source || state.run) return;
  clearRegenerate();
  hideNotice();
  const turn = new AssistantTurn(agentName(source.agentId));
  source.turn.el.after(turn.el);
  scrollToEnd(true);
  announce(`${agentName(source.agentId)} is answering again.`);
  const run = { agentId: source.agentId, runId: null, sessionId: source.sessionId, newSession: false, turn, kind: "regenerate" };
  const terminal = await streamRun(run, (signal) => api.regenerateRun(source.agentId, source.runId, { sessionId: source.sessionId }, signal));
  // The new answer replaces the old one once complete; otherwise the old one stays, and can be tried again.
  if (terminal === "RunCompleted") source.turn.el.remove();
  else offerRegenerate(source.turn, source.agentId, source.runId, source.sessionId);
}

/** Pick up a run that is still executing on the server: replay what was missed, then follow it. */
async function resumeRun({ agentId, runId, sessionId, turn, lastEventIndex = -1 }) {
  const run = { agentId, runId, sessionId, newSession: false, turn, lastEventIndex, busyLabel: "Still working…" };
  return streamRun(run, (signal) => api.resumeRun(agentId, runId, { sessionId, lastEventIndex }, signal));
}

async function stopRun() {
  const run = state.run;
  if (!run || run.stopping) return;
  run.stopping = true;
  ui.stop.disabled = true;
  run.turn.setBusy(true, "Stopping…");
  let asked = false;
  if (run.runId && run.sessionId) {
    try {
      await api.cancelRun(run.agentId, run.runId, run.sessionId);
      asked = true;
    } catch {
      // a session not recorded yet can't be addressed: closing the stream cancels the run
    }
  }
  // Give the server a moment to end the stream with RunCancelled; then cut it.
  if (state.run === run) run.stopTimer = setTimeout(() => run.controller.abort(), asked ? 3000 : 0);
}

// ---- the composer, the sidebar on small screens ---------------------------------------------

function autosize() {
  ui.input.style.height = "auto";
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 240)}px`;
}

function openSidebar() {
  ui.app.dataset.sidebar = "open";
  ui.toggle.setAttribute("aria-expanded", "true");
  ui.scrim.hidden = false;
  ui.search.focus();
}

function closeSidebar() {
  if (ui.app.dataset.sidebar !== "open") return;
  ui.app.dataset.sidebar = "closed";
  ui.toggle.setAttribute("aria-expanded", "false");
  ui.scrim.hidden = true;
}

function bind() {
  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    sendMessage(ui.input.value);
  });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendMessage(ui.input.value);
    }
  });
  ui.input.addEventListener("input", autosize);
  ui.stop.addEventListener("click", stopRun);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state.run && !document.querySelector("dialog[open]")) stopRun();
    if (event.key === "Escape") closeSidebar();
  });
  ui.newChat.addEventListener("click", () => newChat({ push: true }));
  ui.picker.addEventListener("change", () => {
    localStorage.setItem(AGENT_KEY, ui.picker.value);
    selectAgent(ui.picker.value);
    if (state.sessionId) newChat({ push: true }); // a conversation belongs to one agent
  });
  let searchTimer;
  ui.search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      state.search = ui.search.value.trim();
      loadSessions().catch(report);
    }, 250);
  });
  ui.more.addEventListener("click", () => loadSessions({ append: true }).catch(report));
  ui.toggle.addEventListener("click", () => (ui.app.dataset.sidebar === "open" ? closeSidebar() : openSidebar()));
  ui.scrim.addEventListener("click", closeSidebar);
  window.addEventListener("popstate", (event) => {
    const sessionId = event.state?.sessionId ?? null;
    if (sessionId) openSession(sessionId);
    else newChat();
  });
}

async function start() {
  bind();
  if (document.body.dataset.notFound === "true") {
    showNotice("That conversation doesn't exist, or it isn't yours.");
    history.replaceState({ sessionId: null }, "", config.chatUrl);
  }
  try {
    await loadAgents();
  } catch (error) {
    report(error);
  }
  const sessions = loadSessions().catch(report);
  if (config.sessionId) {
    await sessions;
    history.replaceState({ sessionId: config.sessionId }, "", location.pathname);
    await openSession(config.sessionId);
  } else {
    history.replaceState({ sessionId: null }, "", location.pathname);
    await sessions;
  }
  document.body.dataset.ready = "true";
}

start();
