// The chat page: agent picker, the user's sessions, and runs streamed from the AgentOS API.
import { ApiError, TEAM_PREFIX, WORKFLOW_PREFIX, makeApi } from "./api.js";
import { readEventStream } from "./sse.js";
import { AssistantTurn, copyWithFeedback, el, needsDecision, storedTools, userTurn, when } from "./render.js";
import { applyMemberFrame, isDelegation, memberAskers, renderMemberSteps, waitingMemberTools } from "./team.js";
import { WorkflowTimeline, fieldInput, fieldValue, reviewPanel, reviewRecord, schemaFields } from "./workflow.js";
import { renderFeedback } from "./feedback.js";
import { needsOperator, operatorCard, operatorRecord, startApprovalBadge } from "./approvals.js";
import { setupAttachments } from "./attachments.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
/** A reply's run id for its "Trace" link, where this deployment traces runs (else no link). */
const tracedRun = (runId) => (config.tracing ? runId : null);
const SOURCE_URLS = { documentsUrl: config.documentsUrl, runsUrl: config.runsUrl };
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
  limit: $("composer-limit"),
  live: $("live-status"),
  renameDialog: $("rename-dialog"),
  renameInput: $("rename-input"),
  deleteDialog: $("delete-dialog"),
  deleteName: $("delete-name"),
  switchDialog: $("switch-dialog"),
  theme: $("theme-picker"),
  help: $("shortcuts-dialog"),
  helpButton: $("shortcuts-button"),
};

const state = {
  agents: new Map(), // component key (an agent's id, "team:<id>", "workflow:<id>") -> its AgentOS description
  agentId: null, // the picked component's key
  quickPrompts: {}, // /config's chat.quick_prompts: component id -> prompts offered on an empty conversation
  sessionId: null,
  sessionName: "",
  sessions: [],
  page: 1,
  totalPages: 1,
  search: "",
  run: null, // the run this page is streaming: {agentId, runId, sessionId, controller, turn, ...}
  loadToken: 0,
  runs: [], // the open conversation's stored runs (every version of every message), as last loaded
  knownRuns: new Set(), // the open conversation's runs this page shows or streamed (another tab's are new)
};

const TERMINAL = new Set(["RunCompleted", "RunError", "RunCancelled", "RunPaused"]);
// RunError types that are a check's decision (engine.hooks, the token budget), shown as such.
const REFUSALS = new Set(["input_check_error", "output_check_error", "token_budget_exceeded"]);
const refusalHeading = (data) => (data.error_type === "token_budget_exceeded" ? "Stopped. " : "Refused. ");
const hookKey = (event, data) => `${event.startsWith("Pre") ? "pre" : "post"}:${data.pre_hook_name || data.post_hook_name}`;
const hookLabel = (event, data) => `${data.guardrail ? "guardrail" : event.startsWith("Pre") ? "pre-hook" : "post-hook"} ${data.pre_hook_name || data.post_hook_name}`;
const AGENT_KEY = "agno-site.chat.agent";
const THEME_KEY = "agno-site.theme";

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

// Whether the view follows the conversation's end: from a message sent (or a conversation
// opened) until the person scrolls up to read, and again once they are back at the end. Decided
// before content grows, not after: a reply that arrives in one large piece (a table, a code block)
// must not leave the view behind. And decided from where the view is when content grows, not only
// from the scroll event: that event comes a frame after the scroll, and a late render in between
// (a reply's markdown, a button's label) must not pull the view back down from where the person went.
let following = true;
let endTop = 0; // the scrollTop the view had when last at the end: below it, the person scrolled up
const AT_THE_END = 8; // px: momentum and fractional scrolling stop about the end, not on it

function atTheEnd(box) {
  return box.scrollHeight - box.scrollTop - box.clientHeight < AT_THE_END;
}

/** Whether the person has left the end (scrolled up), seen from the view itself. A view pulled up
 *  because its content shrank is still at the (new) end: that is not the person's doing. */
function notePosition(box) {
  if (atTheEnd(box)) {
    following = true;
    endTop = box.scrollTop;
  } else if (box.scrollTop < endTop - 1) {
    following = false;
  }
}

function scrollToEnd(force = false) {
  const box = ui.messages;
  if (force) following = true;
  else notePosition(box);
  if (!following) return;
  box.scrollTop = box.scrollHeight;
  endTop = box.scrollTop;
}

function followTheEnd() {
  ui.messages.addEventListener("scroll", () => notePosition(ui.messages), { passive: true });
  // Whatever is added (streamed text, a tool's card, the reply's actions) keeps the end in view.
  new MutationObserver(() => scrollToEnd()).observe(ui.messages, { childList: true, subtree: true, characterData: true });
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
  document.body.classList.toggle("is-running", running);
  // An approval still waiting stays decidable, except while another reply streams: one stream at a time.
  for (const panel of ui.messages.querySelectorAll(".approval:not(.is-sent)")) {
    if (state.run && state.run.turn.el.contains(panel)) continue; // its own run: enabled when it has paused
    setPanelEnabled(panel.parentElement, !running);
    const hint = panel.querySelector(".approval-hint");
    if (hint) hint.textContent = running ? "You can decide once the reply below has finished." : WAITING_HINT;
  }
}

const WAITING_HINT = "This waits for your decision: decide now, or go on talking and decide later.";

/** Stop showing the run this page streams; it goes on on the server, and opening its conversation again follows it. */
function detachRun() {
  const run = state.run;
  if (!run) return;
  run.detached = true;
  run.controller?.abort();
  clearTimeout(run.stopTimer);
  state.run = null;
  setRunning(false);
}

function agentName(agentId) {
  return state.agents.get(agentId)?.name || agentId?.replace(TEAM_PREFIX, "").replace(WORKFLOW_PREFIX, "") || "Agent";
}

/** The component a session or a run belongs to, as the picker names it. */
function componentOf(item) {
  if (item?.workflow_id) return `${WORKFLOW_PREFIX}${item.workflow_id}`;
  return item?.team_id ? `${TEAM_PREFIX}${item.team_id}` : item?.agent_id;
}

const isTeam = (key) => Boolean(key?.startsWith(TEAM_PREFIX));
const isWorkflow = (key) => Boolean(key?.startsWith(WORKFLOW_PREFIX));
const kindOf = (key) => (isTeam(key) ? "team" : isWorkflow(key) ? "workflow" : "agent");

// ---- agents and teams ---------------------------------------------------------------------

async function loadAgents() {
  // A server without teams or workflows (or one that fails to list them) still offers its agents.
  const [agents, teams, workflows, osConfig] = await Promise.all([
    api.agents(), api.teams().catch(() => []), loadWorkflows(), api.config().catch(() => ({})),
  ]);
  state.quickPrompts = osConfig.chat?.quick_prompts || {};
  state.agents = new Map([
    ...agents.map((agent) => [agent.id, agent]),
    ...teams.map((team) => [`${TEAM_PREFIX}${team.id}`, team]),
    ...workflows.map((workflow) => [`${WORKFLOW_PREFIX}${workflow.id}`, workflow]),
  ]);
  const option = (key, item) => el("option", { value: key, text: item.name || item.id });
  const agentOptions = agents.map((agent) => option(agent.id, agent));
  if (teams.length || workflows.length) {
    const teamOptions = teams.map((team) => el("option", { value: `${TEAM_PREFIX}${team.id}`, text: `${team.name || team.id} (${team.mode || "team"})` }));
    const workflowOptions = workflows.map((workflow) => option(`${WORKFLOW_PREFIX}${workflow.id}`, workflow));
    ui.picker.replaceChildren(
      ...(agentOptions.length ? [el("optgroup", { label: "Agents" }, ...agentOptions)] : []),
      ...(teamOptions.length ? [el("optgroup", { label: "Teams" }, ...teamOptions)] : []),
      ...(workflowOptions.length ? [el("optgroup", { label: "Workflows" }, ...workflowOptions)] : []));
    document.querySelector('label[for="agent-picker"]').textContent = "Talk to";
  } else {
    ui.picker.replaceChildren(...agentOptions);
  }
  if (!state.agents.size) {
    ui.picker.append(el("option", { value: "", text: "No agents available" }));
    ui.picker.disabled = true;
    showNotice("There are no agents you can talk to yet. Ask an operator to publish one.");
    return;
  }
  const remembered = localStorage.getItem(AGENT_KEY);
  selectAgent(state.agents.has(remembered) ? remembered : state.agents.keys().next().value);
}

/** The workflows with their steps and input_schema (the list has summaries only): the timeline is laid out from them. */
async function loadWorkflows() {
  const listed = await api.workflows().catch(() => []);
  return Promise.all(listed.map((item) => api.workflow(item.id).catch(() => item)));
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
    if (isTeam(agentId)) {
      // A team says how it works: its mode and who is in it.
      const members = (agent.members || []).map((member) => member.name || member.id);
      ui.badge.textContent += ` · ${agent.mode || "team"} team`;
      ui.badge.title = [ui.badge.title, members.length ? `Members: ${members.join(", ")}` : ""].filter(Boolean).join(" ");
    }
    if (isWorkflow(agentId)) {
      const steps = agent.steps || [];
      ui.badge.textContent = `Workflow · ${steps.length} step${steps.length === 1 ? "" : "s"}`;
      ui.badge.classList.remove("badge-offline");
      ui.badge.title = steps.map((step) => `${step.name} (${step.type})`).join(" → ");
    }
  }
  showWorkflowFields(isWorkflow(agentId) ? agent : null);
  showFactoryFields(agent);
  const welcomeName = $("welcome-agent");
  if (welcomeName) welcomeName.textContent = agent ? agent.name : "an agent";
  const welcomeText = $("welcome-description");
  if (welcomeText) welcomeText.textContent = agent?.description || "";
  showQuickPrompts(agentId);
  ui.input.disabled = !agent;
  ui.send.disabled = !agent;
}

/** The component's quick prompts (/config's chat.quick_prompts) on the empty conversation: a click sends one. */
function showQuickPrompts(agentId) {
  const box = $("quick-prompts");
  if (!box) return;
  const id = agentId?.replace(TEAM_PREFIX, "").replace(WORKFLOW_PREFIX, "");
  const prompts = state.quickPrompts[id] || [];
  box.replaceChildren(...prompts.map((prompt) => {
    const button = el("button", { type: "button", class: "quick-prompt", text: prompt });
    button.addEventListener("click", () => sendMessage(prompt));
    return button;
  }));
  box.hidden = prompts.length === 0;
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
  el("span", { class: "session-meta", text: [agentName(componentOf(session)), relativeTime(session.updated_at || session.created_at)].filter(Boolean).join(" · ") }));
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

function pickAgent(agentId) {
  localStorage.setItem(AGENT_KEY, agentId);
  selectAgent(agentId);
}

/** Another agent picked inside a conversation: a new chat with it, once the person says so. */
function askNewChatWith(agentId) {
  const dialog = ui.switchDialog;
  $("switch-from").textContent = agentName(state.agentId);
  $("switch-to").textContent = agentName(agentId);
  $("switch-confirm").textContent = `New chat with ${agentName(agentId)}`;
  dialog.returnValue = "";
  dialog.onclose = () => {
    if (dialog.returnValue !== "new") return ui.picker.focus();
    pickAgent(agentId);
    newChat({ push: true });
  };
  dialog.showModal();
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
  detachRun();
  state.loadToken += 1;
  state.sessionId = null;
  state.runs = [];
  setTitle("");
  showOrigin(null);
  clearMessages();
  hideNotice();
  markCurrentSession();
  if (push) history.pushState({ sessionId: null }, "", config.chatUrl);
  closeSidebar();
  ui.input.focus();
}

async function openSession(sessionId, { push = false } = {}) {
  detachRun();
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
  // A team's member runs carry their own agent_id: the conversation's component is its top-level runs'.
  const agentId = componentOf(known) || componentOf(runs.find((run) => !run.parent_run_id));
  if (agentId && state.agents.has(agentId)) selectAgent(agentId);
  else if (agentId) showNotice(`The ${kindOf(agentId)} of this conversation is not available any more; you can read it, but not continue it.`);
  showOrigin(runs.find((run) => !run.parent_run_id)?.origin);
  renderHistory(runs);
  scrollToEnd(true);
}

/** Where a session an eval or a schedule made belongs: said above it, with a link to that page. */
const ORIGIN_PAGES = {
  eval: { text: "An eval made this conversation: it is not in your conversation list.", link: "My evals", href: "/chat/evals/" },
  schedule: { text: "A schedule made this conversation: it is not in your conversation list.", link: "My schedules", href: "/chat/schedules/" },
};

function showOrigin(origin) {
  const box = $("session-origin");
  const page = ORIGIN_PAGES[origin];
  box.hidden = !page;
  box.dataset.origin = page ? origin : "";
  if (page) box.replaceChildren(`${page.text} `, el("a", { href: page.href, text: `Back to ${page.link}` }));
}

/** The conversation as the server stores it: a tree of runs, each after the run before it on its
 * branch (``previous_run_id``); an edit or a regeneration is a sibling of the run it redoes. */
function branches(runs) {
  // Team member runs are shown through their team's run, not on their own.
  const children = new Map();
  for (const run of runs.filter((one) => !one.parent_run_id)) {
    if (run.status === "REGENERATED") continue; // gave way to the answer that replaced it
    const key = run.previous_run_id || "";
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(run);
  }
  return children;
}

/** The runs on screen: the active branch (the one the model answers from), else the newest. */
function shownPath(runs) {
  const children = branches(runs);
  const path = [];
  let key = "";
  while (children.has(key) && path.length <= runs.length) {
    const siblings = children.get(key);
    const chosen = siblings.find((run) => run.branch_active) || siblings[siblings.length - 1];
    path.push({ run: chosen, siblings });
    key = chosen.run_id;
  }
  return path;
}

/** What the user asked in this run: an edited run keeps its source's input, its transcript has the new one. */
// What the runtime adds to a message with add_knowledge_to_context: not what the person wrote.
const ADDED_REFERENCES = /\n\nUse the following references from the knowledge base if it helps:\n<references>[\s\S]*<\/references>$/;

function askedIn(run) {
  const own = ownUserMessage(run.messages || []);
  if (run.forked_from_run_id && own) return plainContent(own.message.content).replace(ADDED_REFERENCES, "");
  return run.run_input || (own ? plainContent(own.message.content) : "");
}

function ownUserMessage(messages) {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message.role === "user" && !message.from_history) return { message, index };
  }
  return null;
}

// Texts the server writes into a run that never ran: not the agent's words.
const INTERNAL_STAGES = new Set(["PENDING", "PAUSED"]);

function renderHistory(runs) {
  state.runs = runs;
  state.knownRuns = new Set(runs.map((run) => run.run_id));
  const path = shownPath(runs);
  path.forEach(({ run, siblings }, index) => {
    const last = index === path.length - 1;
    const asked = userTurn(askedIn(run));
    asked.title = when(run.created_at);
    ui.messages.append(asked);
    decorateUserTurn(asked, { run, siblings, text: askedIn(run) });
    const component = componentOf(run);
    const turn = new AssistantTurn(agentName(component));
    turn.runId = run.run_id;
    ui.messages.append(turn.el);
    if (isWorkflow(component)) {
      renderWorkflowRun(turn, run, component);
      return;
    }
    const continuedAt = (run.events || []).find((event) => /^(Team)?RunContinued$/.test(event.event))?.created_at;
    // A team run still executing is replayed from its first event on resume, its steps with it.
    const live = run.status === "RUNNING" || run.status === "PENDING";
    if (!live) turn.setReasoning(run.reasoning_content);
    const members = isTeam(component) && !live ? renderMemberSteps(turn, run, runs, { team: state.agents.get(component), continuedAt }) : [];
    for (const tool of storedTools(run)) {
      if (needsDecision(tool) || isDelegation(tool)) continue;
      if (tool.confirmed === true || tool.confirmed === false || tool.answered) recordDecision(turn, tool, { by: run.user_id, at: continuedAt });
      turn.toolFinished(tool);
    }
    const status = run.status;
    if (status === "RUNNING" || status === "PENDING") {
      // A run still executing on the server (a background run, or one left by a reload): follow it.
      resumeRun({ agentId: component, runId: run.run_id, sessionId: state.sessionId, turn });
      return;
    }
    turn.setMeta({ createdAt: run.created_at, model: modelName(component), metrics: run.metrics, runId: tracedRun(run.run_id) });
    const source = { turn, agentId: component, runId: run.run_id, sessionId: state.sessionId };
    const refusal = status === "ERROR" && (run.events || []).find((event) => /RunError$/.test(event.event) && REFUSALS.has(event.error_type));
    if (refusal) {
      turn.error(plainContent(run.content), refusalHeading(refusal)); // the same message would be refused again: no retry
    } else if (status === "ERROR") {
      turn.error(plainContent(run.content) || `The ${isTeam(component) ? "team" : "agent"} could not finish this reply.`);
      if (last) offerAgain({ ...source, failed: true });
    } else if (status === "CANCELLED") {
      if (!INTERNAL_STAGES.has(run.cancellation_stage)) turn.setFinalText(run.content);
      turn.note("Stopped", "stopped");
    } else if (!(status === "PAUSED" && members.length)) {
      turn.setFinalText(run.content); // a team paused by a member holds the server's note, not the team's words
    }
    // The passages the answer drew on: the run's own searches and its members'.
    turn.setSources([run, ...runs.filter((one) => one.parent_run_id === run.run_id)].map((one) => ({ runId: one.run_id, references: one.references })), SOURCE_URLS);
    if (status === "COMPLETED" && last) offerAgain(source);
    if (status === "COMPLETED") renderFeedback(turn.el, { ...run, session_id: state.sessionId });
    if (status === "PAUSED") {
      // A team waits on its members' tool calls: the approval names the member that asks.
      const waiting = members.length ? waitingMemberTools(members) : run.tools || [];
      turn.onDecided = (tools, panel) => continueRun({ agentId: component, runId: run.run_id, sessionId: state.sessionId, turn, tools, panel });
      turn.paused(waiting, { askers: memberAskers(members) })?.append(el("p", { class: "approval-hint", text: WAITING_HINT }));
      awaitOperators(turn, run, state.sessionId);
    }
    turn.closeSegment();
    turn.offerCopy();
  });
}

/** A stored workflow run: its timeline replayed from its events, its reply, and the review it waits for. */
function renderWorkflowRun(turn, run, component) {
  const timeline = workflowTimeline(turn, component);
  const live = run.status === "RUNNING" || run.status === "PENDING";
  if (live) {
    // Still executing on the server: the resume replays its events from the first, timeline with it.
    resumeRun({ agentId: component, runId: run.run_id, sessionId: state.sessionId, turn });
    return;
  }
  const events = run.events || [];
  if (events.length) for (const event of events) timeline.apply({ event: event.event, data: event }, run.run_id);
  else timeline.fromResults(run.step_results);
  turn.setMeta({ createdAt: run.created_at, metrics: run.metrics, runId: tracedRun(run.run_id) });
  for (const requirement of [...(run.step_requirements || []), ...(run.error_requirements || [])]) {
    const record = reviewRecord(requirement, { by: run.user_id });
    if (record) turn.body.append(record);
  }
  if (run.status === "ERROR") turn.error(plainContent(run.content) || "The workflow could not finish.");
  else if (run.status === "CANCELLED") turn.note("Stopped", "stopped");
  else if (run.status === "COMPLETED") turn.setFinalText(run.content);
  if (run.status === "PAUSED") {
    offerReview(turn, { agentId: component, runId: run.run_id, sessionId: state.sessionId }, [...(run.step_requirements || []), ...(run.error_requirements || [])])?.append(el("p", { class: "approval-hint", text: WAITING_HINT }));
  }
  turn.closeSegment();
  turn.offerCopy();
}

/** The turn's timeline, laid out from the workflow's steps the first time. */
function workflowTimeline(turn, component) {
  if (!turn.timeline) {
    turn.timeline = new WorkflowTimeline(state.agents.get(component) || { name: agentName(component) });
    turn.closeSegment();
    turn.body.append(turn.timeline.el);
  }
  return turn.timeline;
}

/** The review a paused workflow waits for, answered in place: its continue streams into the same turn.
 * An agent or team step paused on an @approval call waits for an operator instead (its card). */
function offerReview(turn, { agentId, runId, sessionId }, requirements, { disabled = false } = {}) {
  turn.closeSegment();
  const operated = (requirements || []).filter((one) => one.requires_executor_input
    && (one.executor_requirements || []).some((req) => needsOperator(req?.tool_execution) && needsDecision(req.tool_execution)));
  if (operated.length) awaitOperators(turn, { requirements: operated.flatMap((one) => one.executor_requirements || []) }, sessionId);
  const panel = reviewPanel((requirements || []).filter((one) => !operated.includes(one)), {
    disabled,
    onDecided: (answered, form, verbs) => continueWorkflow({ agentId, runId, sessionId, turn, requirements: answered, panel: form, verbs }),
  });
  if (panel) turn.body.append(panel);
  return panel;
}

/** Who decided a paused call: the user, or for an @approval call the operator who resolved it. */
function recordDecision(turn, tool, stamp) {
  if (!needsOperator(tool)) return turn.decision(tool, stamp);
  turn.closeSegment();
  turn.body.append(operatorRecord(tool));
}

/** Paused calls an operator decides (one card per approval): the card waits for the decision,
 * and once the run has gone on, the conversation is loaded again to show its continuation. */
function awaitOperators(turn, run, sessionId) {
  const calls = [...(run.tools || []), ...(run.requirements || []).map((req) => req?.tool_execution)];
  const cards = new Map();
  for (const tool of calls) if (needsOperator(tool) && needsDecision(tool) && !cards.has(tool.approval_id)) cards.set(tool.approval_id, tool);
  if (!cards.size) return;
  turn.closeSegment();
  for (const tool of cards.values()) {
    // Decided and gone on: the card becomes the record a reload shows (who decided, the note).
    const card = operatorCard(tool, { onContinued: () => showContinuation(turn, sessionId, () => card.replaceWith(operatorRecord(tool))) });
    turn.body.append(card);
  }
}

function showContinuation(turn, sessionId, recordInPlace) {
  if (state.sessionId !== sessionId || !turn.el.isConnected) return;
  if (state.run?.turn === turn) {
    recordInPlace?.(); // this page already streams the continuation into it: no reload to render the record
    return;
  }
  if (state.run) {
    setTimeout(() => showContinuation(turn, sessionId, recordInPlace), 1000); // one stream at a time: after this one
    return;
  }
  openSession(sessionId).catch(report);
}

function modelName(agentId) {
  const model = state.agents.get(agentId)?.model || {};
  return [model.provider, model.model || model.id].filter(Boolean).join(" · ");
}

/** A sent message: its time on hover, Edit (a new branch from it), and the branch switcher. */
function decorateUserTurn(article, { run, siblings = [], text }) {
  const bar = el("div", { class: "msg-actions msg-actions-user" });
  if (siblings.length > 1) {
    const at = siblings.indexOf(run);
    // The whole branch from this message on: the version and the turns that followed it, and
    // the next message continues it (the server keeps which branch is active).
    const show = async (offset) => {
      if (state.run) return showNotice("Versions switch once the reply has finished.");
      const sessionId = state.sessionId;
      let active;
      try {
        active = (await (await api.activateBranch(sessionId, siblings[at + offset].run_id)).json()).active_run_ids;
      } catch (error) {
        report(error);
        return;
      }
      if (state.sessionId !== sessionId || state.run) return;
      const chosen = new Set(active);
      for (const one of state.runs) if (!one.parent_run_id) one.branch_active = chosen.has(one.run_id);
      clearRegenerate();
      clearMessages();
      ui.welcome.hidden = true;
      renderHistory(state.runs);
      announce(`Version ${at + offset + 1} of ${siblings.length}`);
    };
    bar.append(el("div", { class: "branch-switch", role: "group", "aria-label": "Versions of this message" },
      el("button", { type: "button", class: "msg-action", "aria-label": "Previous version", disabled: at === 0, onclick: () => show(-1) }, "‹"),
      el("span", { class: "branch-count", text: `${at + 1}/${siblings.length}` }),
      el("button", { type: "button", class: "msg-action", "aria-label": "Next version", disabled: at === siblings.length - 1, onclick: () => show(1) }, "›")));
  }
  if (run && state.agents.has(componentOf(run)) && !isWorkflow(componentOf(run)) && !["RUNNING", "PENDING", "PAUSED", "CANCELLED"].includes(run.status)) {
    bar.prepend(el("button", { type: "button", class: "msg-action msg-edit-button", title: "Edit this message and answer it again, as a new version", onclick: () => editMessage(article, { run, text }) }, "Edit"));
  }
  if (bar.children.length) article.append(bar);
}

function plainContent(content) {
  if (content === null || content === undefined) return "";
  return typeof content === "string" ? content : JSON.stringify(content);
}

// ---- runs: start, continue, resume, stop ----------------------------------------------------

/** Apply one stream frame to the turn; returns the terminal event name when the run ended. */
function applyFrame(run, frame) {
  const { data } = frame;
  const turn = run.turn;
  if (typeof data.event_index === "number") run.lastEventIndex = data.event_index;
  if (isWorkflow(run.agentId)) return applyWorkflowFrame(run, frame);
  if (data.parent_run_id && data.run_id !== run.runId && run.runId) {
    // A team member's events: its step under the team's reply.
    if (applyMemberFrame(turn, frame, state.agents.get(run.agentId))) scrollToEnd();
    if (frame.event === "RunStarted" && data.agent_name) announce(`${data.agent_name} is working on it.`);
    return null;
  }
  // The team's own events are the agent's, named Team*: one reading of both.
  const event = data.team_id && frame.event.startsWith("Team") ? frame.event.slice(4) : frame.event;
  const who = isTeam(run.agentId) ? "team" : "agent";
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
      if (data.reasoning_content) turn.appendReasoning(data.reasoning_content);
      if (typeof data.content === "string") turn.appendText(data.content);
      else if (data.content) turn.setFinalText(data.content);
      scrollToEnd();
      return null;
    case "ReasoningContentDelta":
      // The reasoning model's step (reasoning_model=...): the same collapsed thinking.
      turn.appendReasoning(data.reasoning_content);
      return null;
    case "ToolCallStarted":
      if (data.tool && !isDelegation(data.tool)) turn.toolStarted(data.tool); // a delegation is shown as its member's step
      scrollToEnd();
      return null;
    case "ToolCallCompleted":
      if (data.tool && !isDelegation(data.tool)) turn.toolFinished(data.tool);
      return null;
    case "ToolCallError":
      if (data.tool && !isDelegation(data.tool)) turn.toolFinished(data.tool, data.error || "The tool failed.");
      return null;
    case "RunCompleted":
      if (run.cancelled) return "RunCancelled"; // AgentOS sends RunCompleted after RunCancelled
      turn.setFinalText(data.content);
      turn.setSources([{ runId: data.run_id || run.runId, references: data.references }], SOURCE_URLS);
      turn.setMeta({ createdAt: data.created_at || Date.now() / 1000, model: modelName(run.agentId), metrics: data.metrics, runId: tracedRun(data.run_id) });
      return event;
    case "PreHookStarted":
    case "PostHookStarted":
      turn.hookStarted(hookKey(event, data), hookLabel(event, data));
      scrollToEnd();
      return null;
    case "PreHookCompleted":
    case "PostHookCompleted":
      turn.hookFinished(hookKey(event, data), data.error ? "error" : data.run_input ? "changed" : "done",
        data.error || (data.run_input ? "The model saw the message with personal data masked." : ""));
      return null;
    case "RunError":
      turn.settleSteps("error");
      if (REFUSALS.has(data.error_type)) {
        // A guardrail (or the token budget) refused: its reason, not a failure of the service.
        turn.hooksRefused();
        turn.error(plainContent(data.content), refusalHeading(data));
        return event;
      }
      turn.error(plainContent(data.content) || `The ${who} could not finish this reply.`);
      return event;
    case "RunCancelled":
      // What was streamed stays; the event's own content may be the server's reason, not the agent's words.
      run.cancelled = true;
      turn.settleSteps("cancelled");
      turn.note("Stopped", "stopped");
      return event;
    case "RunPaused": {
      // A team paused by a member: the member's step says it waits; the team's text is the server's note.
      const askers = new Map((data.requirements || []).filter((one) => one.member_agent_name || one.member_agent_id)
        .map((one) => [one.tool_execution?.tool_call_id, one.member_agent_name || one.member_agent_id]));
      if (!askers.size) turn.setFinalText(data.content);
      turn.onDecided = (tools, panel) => continueRun({ agentId: run.agentId, runId: run.runId, sessionId: run.sessionId, turn, tools, panel });
      // Enabled once the stream has closed: by then the paused run is recorded and can be continued.
      turn.paused(data.tools || [], { disabled: true, askers });
      awaitOperators(turn, data, run.sessionId);
      scrollToEnd(true);
      const asker = [...new Set(askers.values())].join(" and ");
      announce(asker ? `${asker} is waiting for your approval.` : `The ${who} is waiting for your approval.`);
      return event;
    }
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

/** One frame of a workflow's stream: its steps go to the timeline, its end to the reply. */
function applyWorkflowFrame(run, frame) {
  const { event, data } = frame;
  const turn = run.turn;
  if (event === "WorkflowStarted" || (event === "StepContinued" && !run.runId)) {
    run.runId = data.run_id || run.runId;
    if (data.session_id && !run.sessionId) run.sessionId = data.session_id;
    if (run.newSession && run.sessionId && !run.addressed) {
      run.addressed = true; // a reload comes back to it and follows the run
      state.sessionId = run.sessionId;
      history.replaceState({ sessionId: run.sessionId }, "", `${config.sessionUrl}${encodeURIComponent(run.sessionId)}/`);
    }
  }
  if (event === "error") {
    turn.error(data.error || "The workflow's stream failed.");
    return "error";
  }
  if (event === "CustomEvent" && data.name === "RunAttemptStarted" && run.attemptMark) {
    // Executed again after its worker was lost: one timeline, the new attempt's.
    turn.restart(run.attemptMark);
    if (turn.timeline && !turn.body.contains(turn.timeline.el)) turn.timeline = null;
  }
  const timeline = workflowTimeline(turn, run.agentId);
  if (event === "StepStarted" && data.step_name) announce(`Step ${data.step_name} is running.`);
  const end = timeline.apply(frame, run.runId);
  scrollToEnd();
  if (end === "RunCompleted") {
    turn.setFinalText(data.content);
    turn.setMeta({ createdAt: data.created_at || Date.now() / 1000, metrics: data.metrics, runId: tracedRun(data.run_id) });
  } else if (end === "RunError") {
    turn.error(plainContent(data.content || data.error) || "The workflow could not finish.");
  } else if (end === "RunCancelled") {
    run.cancelled = true;
    turn.note("Stopped", "stopped");
  } else if (end === "RunPaused") {
    // Enabled once the stream has closed: by then the paused run is recorded and can be continued.
    offerReview(turn, run, [...(data.step_requirements || []), ...(data.error_requirements || [])], { disabled: true });
    scrollToEnd(true);
    announce(`${data.paused_step_name || "A step"} is waiting for your review.`);
  }
  return end;
}

async function continueWorkflow({ agentId, runId, sessionId, turn, requirements, panel, verbs }) {
  if (state.run) {
    panel.querySelectorAll(".is-decided").forEach((item) => item.classList.remove("is-decided"));
    setPanelEnabled(panel.parentElement, false);
    return;
  }
  panel.classList.add("is-sent");
  panel.querySelector(".approval-hint")?.remove();
  const said = verbs.includes("rejected") ? "You rejected this."
    : verbs.every((verb) => verb === "confirmed" || verb === "accepted") ? "You confirmed this."
    : verbs.length === 1 ? `You ${verbs[0] === "edited" ? "edited the output" : verbs[0]}.` : "Sent.";
  panel.append(el("p", { class: "approval-outcome" }, said, " ", el("span", { class: "approval-when", text: when(new Date()) })));
  const run = { agentId, runId, sessionId, newSession: false, turn, busyLabel: "", kind: "continue" };
  const terminal = await streamRun(run, (signal) => api.continueWorkflow(agentId, runId, { sessionId, requirements }, signal));
  if (!terminal) {
    // The continuation never started (a network failure, a 409): let the person decide again.
    panel.classList.remove("is-sent");
    panel.querySelector(".approval-outcome")?.remove();
    panel.querySelectorAll(".is-decided").forEach((item) => item.classList.remove("is-decided"));
    setPanelEnabled(panel.parentElement, true);
  }
}

// ---- a workflow's input: a form from its input_schema ------------------------------------------

let workflowFields = null; // the composer's fieldset when the picked workflow has an input_schema

function showWorkflowFields(workflow) {
  workflowFields?.remove();
  workflowFields = null;
  const fields = schemaFields(workflow?.input_schema);
  ui.input.hidden = fields.length > 0;
  ui.input.placeholder = workflow ? "Give the workflow its input" : "Send a message";
  if (!fields.length) return;
  ui.form.noValidate = true; // workflowInput() marks what is missing, in the page's own words
  workflowFields = el("fieldset", { class: "workflow-fields" }, el("legend", { text: `${workflow.name}'s input` }), ...fields.map(fieldInput));
  ui.form.prepend(workflowFields);
}

let factoryFields = null; // the composer's fieldset when the picked component is a factory with a factory_input_schema

/** A factory component's setup (its factory_input_schema) as fields above the message box. */
function showFactoryFields(component) {
  factoryFields?.remove();
  factoryFields = null;
  api.setFactoryInput(null);
  const fields = schemaFields(component?.is_factory ? component.factory_input_schema : null);
  if (!fields.length) return;
  ui.form.noValidate = true; // factoryInput() marks what is missing, in the page's own words
  factoryFields = el("fieldset", { class: "workflow-fields factory-fields" },
    el("legend", { text: `${component.name || component.id}'s setup (factory_input)` }), ...fields.map(fieldInput));
  factoryFields.addEventListener("input", () => factoryInput(false));
  factoryFields.addEventListener("change", () => factoryInput(false));
  ui.form.prepend(factoryFields);
}

/** The factory fields' values as factory_input's JSON text, handed to the API for every run it
 * starts or continues; with ``check``, null (the first missing field marked) when a required one is empty. */
function factoryInput(check) {
  if (!factoryFields) return "";
  const values = {};
  for (const input of factoryFields.querySelectorAll("input, select")) {
    const value = fieldValue(input);
    if (value === undefined) {
      if (check && input.required) {
        input.setAttribute("aria-invalid", "true");
        input.focus();
        return null;
      }
      continue;
    }
    input.removeAttribute("aria-invalid");
    values[input.name] = value;
  }
  const json = JSON.stringify(values);
  api.setFactoryInput(json);
  return json;
}

/** The input form's values as the JSON text the workflow's run takes; null when a required one is empty. */
function workflowInput() {
  const values = {};
  for (const input of workflowFields.querySelectorAll("input, select")) {
    const value = fieldValue(input);
    if (value === undefined) {
      if (input.required) {
        input.setAttribute("aria-invalid", "true");
        input.focus();
        return null;
      }
      continue;
    }
    input.removeAttribute("aria-invalid");
    values[input.name] = value;
  }
  return JSON.stringify(values);
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
  let reconnect = false;
  try {
    const response = await open(run.controller.signal);
    await readEventStream(response, (frame) => {
      if (run.detached) return;
      const end = applyFrame(run, frame);
      if (run.runId) state.knownRuns.add(run.runId);
      if (end) terminal = end;
    });
    if (run.detached) {
      terminal = "detached";
    } else if (!terminal) {
      if (run.stopping) {
        terminal = "RunCancelled";
        run.turn.note("Stopped", "stopped");
      } else if (run.runId && run.sessionId && (run.reconnects || 0) < 5) {
        reconnect = true; // the run goes on on the server: pick the stream up where it broke (below)
      } else {
        run.turn.error("The connection closed before the reply finished. Reload the page to see where it got to.");
      }
    }
  } catch (error) {
    if (run.detached) {
      terminal = "detached";
    } else if (error && error.name === "AbortError") {
      terminal = "RunCancelled";
      if (!run.cancelled) run.turn.note("Stopped", "stopped");
    } else if (error instanceof ApiError && error.status === 409 && run.kind === "continue" && !run.conflict) {
      run.conflict = true; // continueRun retries without background
    } else if (error instanceof ApiError) {
      run.failed = true;
      run.refusal = error;
      run.turn.error(error.message);
      if (error.status === 401 || error.status === 403) report(error);
    } else {
      console.error(error);
      run.failed = true;
      run.turn.error("The connection to the server was lost. Check your connection, then reload the page.");
    }
  } finally {
    clearTimeout(run.stopTimer);
    run.turn.closeSegment();
    if (!reconnect) {
      run.turn.setBusy(false);
      if (state.run === run) {
        state.run = null;
        setRunning(false);
      }
    }
  }
  if (reconnect) {
    // Still this page's run meanwhile: Stop works, and leaving the conversation detaches it.
    run.reconnects = (run.reconnects || 0) + 1;
    await new Promise((resolve) => setTimeout(resolve, 500 * run.reconnects));
    if (run.detached) return "detached";
    return streamRun(run, (signal) => api.resumeRun(run.agentId, run.runId, { sessionId: run.sessionId, lastEventIndex: run.lastEventIndex }, signal));
  }
  if (terminal === "detached") {
    loadSessions().then(markCurrentSession).catch(() => {}); // its title may have changed
    return terminal;
  }
  await afterRun(run, terminal);
  return terminal;
}

function isLastReply(turn) {
  const replies = ui.messages.querySelectorAll(".msg-assistant");
  return replies[replies.length - 1] === turn.el;
}

async function afterRun(run, terminal) {
  run.turn.offerCopy();
  const source = { turn: run.turn, agentId: run.agentId, runId: run.runId, sessionId: run.sessionId };
  if (terminal === "RunCompleted" && run.runId) offerAgain(source);
  // Failed before the run existed (a 500, a 401, the network): Retry sends it again; a run that
  // failed is answered again (regenerate), and replaced by the new attempt.
  if (terminal === "RunError" || (run.failed && !terminal)) offerAgain({ ...source, failed: true, retry: run.runId ? undefined : run.retry });
  if (terminal === "RunCompleted" && !isWorkflow(run.agentId)) renderFeedback(run.turn.el, run);
  const labels = { RunCompleted: "Reply complete.", RunError: "The reply failed.", RunCancelled: "Stopped.", RunPaused: isWorkflow(run.agentId) ? "Waiting for your review." : "Waiting for your approval." };
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
  if (terminal === "RunPaused") {
    setPanelEnabled(run.turn.el, true);
    run.turn.el.querySelector(".approval:not(.is-sent)")?.append(el("p", { class: "approval-hint", text: WAITING_HINT }));
  }
  // Keyboard users land on the decision the run waits for (its Approve, not the note field
  // before it), everyone else back in the composer.
  const waiting = terminal === "RunPaused" ? run.turn.el.querySelector(".approval:not(.is-sent)") : null;
  const decision = waiting?.querySelector(".approval-actions button:not([type=submit])") || waiting?.querySelector("input, textarea");
  focusGently(decision || ui.input);
}

const touchScreen = matchMedia("(pointer: coarse)");

/** Focus a control, except a text field on a touch screen: its focus opens the on-screen keyboard
 * over the page when the person has not asked to type. */
function focusGently(node) {
  if (touchScreen.matches && node !== ui.input && typing(node)) return;
  node.focus();
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

let sending = false; // between Enter and the run's start: a second Enter sends nothing

async function sendMessage(text) {
  if (state.run || sending || !state.agentId) return;
  if (factoryInput(true) === null) return; // the factory's required setup comes first
  sending = true;
  let message;
  try {
    await attachments.settled(); // a file refused meanwhile is not named in the message
    message = attachments.mention(text.trim());
  } finally {
    sending = false;
  }
  if (!message || state.run) return;
  if (!checkLength(message)) {
    ui.input.focus();
    return; // refused here: the server would refuse it (413) once sent
  }
  const attached = attachments.take();
  clearRegenerate();
  hideNotice();
  ui.welcome.hidden = true;
  const asked = userTurn(message);
  asked.title = when(new Date());
  ui.messages.append(asked);
  if (ui.messages.querySelector(".approval:not(.is-sent)")) announce("Your approval above still waits; you can decide it after this reply.");
  const turn = new AssistantTurn(agentName(state.agentId));
  ui.messages.append(turn.el);
  scrollToEnd(true);
  ui.input.value = "";
  autosize();
  checkLength();
  announce(`${agentName(state.agentId)} is replying.`);
  const run = { agentId: state.agentId, sessionId: state.sessionId, newSession: !state.sessionId, turn, kind: "new" };
  // A request that failed before the run existed is sent again as it was.
  run.retry = () => {
    asked.remove();
    turn.el.remove();
    sendMessage(message);
  };
  if (run.newSession) setTitle(message.slice(0, 80));
  const terminal = await streamRun(run, (signal) => api.startRun(run.agentId, { message, sessionId: run.sessionId }, signal));
  attached.link(run.sessionId);
  if (run.runId && terminal && terminal !== "detached") {
    decorateUserTurn(asked, { run: { run_id: run.runId, agent_id: run.agentId, status: { RunPaused: "PAUSED", RunCancelled: "CANCELLED" }[terminal] || "ENDED" }, text: message });
  }
}

function setPanelEnabled(root, enabled) {
  for (const node of root.querySelectorAll(".approval:not(.is-sent) :is(button, input, textarea, select)")) node.disabled = !enabled;
}

async function continueRun({ agentId, runId, sessionId, turn, tools, panel }) {
  if (state.run) {
    // The buttons are disabled while another reply streams; a click that raced them lands here.
    if (panel) {
      panel.querySelectorAll(".is-decided").forEach((item) => item.classList.remove("is-decided"));
      setPanelEnabled(panel.parentElement, false);
    }
    return;
  }
  const approved = tools.filter(needsDecision).length === 0 && tools.some((tool) => tool.confirmed === true || tool.answered || tool.result);
  panel?.classList.add("is-sent");
  panel?.querySelector(".approval-hint")?.remove();
  const rejected = tools.some((tool) => tool.confirmed === false);
  panel?.append(el("p", { class: "approval-outcome" }, rejected ? "You rejected this." : approved ? "You approved this." : "Sent.", " ",
    el("span", { class: "approval-when", text: when(new Date()) })));
  // A rejected call never runs, so the stream has no event for it: show its card here.
  for (const tool of tools) if (tool.confirmed === false) (turn.stepOfTool.get(tool.tool_call_id) || turn).toolFinished(tool);
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
    turn.clearActions();
    panel.querySelectorAll(".is-decided").forEach((item) => item.classList.remove("is-decided"));
    setPanelEnabled(panel.parentElement, true);
  }
}

// ---- regenerate and retry: the last answer again ----------------------------------------------

let regenerable = null; // the last finished reply, the only one that can be answered again

/** Regenerate under the last reply, or Retry when it failed; never under a reply further up. */
function offerAgain(source) {
  if (!isLastReply(source.turn)) return;
  clearRegenerate();
  if (source.retry) {
    regenerable = source;
    source.turn.offerAction("Retry", () => {
      clearRegenerate();
      source.retry();
    }, { title: "Send the message again" });
    return;
  }
  // A workflow run is not answered again from its transcript: it is started again from its input.
  if (!source.agentId || !state.agents.has(source.agentId) || isWorkflow(source.agentId) || !source.sessionId || !source.runId) return;
  regenerable = source;
  const label = source.failed ? "Retry" : "Regenerate";
  source.turn.offerAction(label, () => regenerate(regenerable), { title: source.failed ? "Try this reply again" : "Answer the last message again" });
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
  if (terminal === "detached") return;
  // The new answer replaces the old one once complete (a failed one is replaced by the new
  // attempt whatever it gave); otherwise the old one stays, and can be tried again.
  if (terminal === "RunCompleted" || (source.failed && run.runId && terminal)) source.turn.el.remove();
  // A team answers again from its members' earlier work, which its stream does not repeat: the
  // stored runs show those steps under the new answer.
  if (terminal === "RunCompleted" && isTeam(source.agentId) && state.sessionId === source.sessionId) await openSession(source.sessionId);
  else if (!run.runId) {
    turn.el.remove();
    offerAgain(source);
  }
}

// ---- edit: a sent message again, as a new version ---------------------------------------------

function editMessage(article, { run, text }) {
  if (article.querySelector(".msg-edit")) return;
  const body = article.querySelector(".msg-body");
  const limitId = `msg-edit-limit-${run.run_id}`;
  const area = el("textarea", { class: "msg-edit-input", rows: 3, "aria-label": "Edit your message", "aria-describedby": limitId });
  area.value = text;
  // The server's limit, shown from the start (the composer shows it near the limit only): an
  // edit over it is refused here, as the server would refuse it (413).
  const limit = el("p", { id: limitId, class: "composer-limit msg-edit-limit", role: "status" });
  const send = el("button", { type: "submit", class: "btn btn-primary" }, "Send");
  const checkEdit = () => {
    const { over, near, text: said } = measure(area.value.trim(), "shorten the message to send it.");
    limit.classList.toggle("is-over", over);
    limit.textContent = near ? said : `At most ${config.maxMessageChars.toLocaleString()} characters.`;
    area.setAttribute("aria-invalid", String(over));
    send.disabled = over;
    return !over;
  };
  const form = el("form", { class: "msg-edit" }, area, limit,
    el("div", { class: "msg-edit-actions" },
      el("button", { type: "button", class: "btn btn-secondary", onclick: () => close() }, "Cancel"),
      send));
  area.addEventListener("input", checkEdit);
  checkEdit();
  const close = () => {
    form.remove();
    body.hidden = false;
    article.querySelector(".msg-actions-user")?.removeAttribute("hidden");
  };
  body.hidden = true;
  article.querySelector(".msg-actions-user")?.setAttribute("hidden", "");
  article.append(form);
  area.focus();
  area.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      close();
    } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const message = area.value.trim();
    if (!message || message === text.trim()) return close();
    if (!checkEdit()) return area.focus(); // over the limit: refused here, the box keeps the text
    if (state.run) return;
    await branchFrom(article, { run, message });
  });
}

async function branchFrom(article, { run, message }) {
  const sessionId = state.sessionId;
  const component = componentOf(run); // a stored team run names its team, one just sent its key
  let stored;
  try {
    stored = await api.run(component, run.run_id, sessionId);
  } catch (error) {
    report(error);
    return;
  }
  // The new version answers the edited message in place of the run's own: keep the
  // transcript up to that message (the history before it), then send the new text.
  const own = ownUserMessage(stored.messages || []);
  if (!own) {
    showNotice("This message can't be edited: its run kept no transcript.");
    return;
  }
  clearRegenerate();
  hideNotice();
  while (article.nextElementSibling) article.nextElementSibling.remove(); // the other version's replies
  const asked = userTurn(message);
  article.replaceWith(asked);
  const turn = new AssistantTurn(agentName(component));
  ui.messages.append(turn.el);
  scrollToEnd(true);
  announce(`${agentName(component)} is answering your edited message.`);
  const next = { agentId: component, runId: null, sessionId, newSession: false, turn, kind: "edit" };
  const terminal = await streamRun(next, (signal) => api.editRun(component, run.run_id, { sessionId, input: message, continueFrom: own.index }, signal));
  if (terminal === "detached" || state.sessionId !== sessionId) return;
  await openSession(sessionId); // the new version's branch is the active one now
  // Refused before a run existed (e.g. over the server's length limit): the conversation is
  // shown as it was, and the server's reason stays on screen.
  if (next.refusal && !next.runId) showNotice(`Your edit was not sent: ${next.refusal.message}`);
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

// ---- the same conversation in another tab ---------------------------------------------------

const CATCH_UP_MS = 10_000;

/** A conversation open in two tabs (or on a phone and a laptop): each shows what the other sent,
 * looked for when the tab comes back into view, and every few seconds while it is in view and
 * idle. A run this page does not know is another tab's: the conversation is shown again. */
async function catchUp() {
  const sessionId = state.sessionId;
  if (!sessionId || state.run || sending || document.hidden || editingInConversation()) return;
  const token = state.loadToken;
  let runs;
  try {
    runs = await api.sessionRuns(sessionId);
  } catch {
    return; // a blip of the network: the next look will do
  }
  if (token !== state.loadToken || state.run || editingInConversation()) return;
  if (runs.every((run) => run.parent_run_id || state.knownRuns.has(run.run_id))) return;
  await openSession(sessionId, { keepBranches: true });
}

/** Something typed in the conversation (an edit, a note, feedback) that showing it again would lose. */
function editingInConversation() {
  return Boolean(ui.messages.querySelector(".msg-edit")) || (ui.messages.contains(document.activeElement) && typing(document.activeElement));
}

function followOtherTabs() {
  setInterval(catchUp, CATCH_UP_MS);
  document.addEventListener("visibilitychange", catchUp);
  window.addEventListener("focus", catchUp);
}

// ---- keyboard shortcuts and the theme -------------------------------------------------------

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

/** Esc stops a reply; Ctrl/⌘+Shift+O a new chat; Ctrl/⌘+K search; ? lists them all. */
function onShortcut(event) {
  const dialogOpen = document.querySelector("dialog[open]");
  const mod = event.ctrlKey || event.metaKey;
  if (event.key === "Escape") {
    if (state.run && !dialogOpen) stopRun();
    closeSidebar();
    return;
  }
  if (dialogOpen) return;
  if (mod && event.shiftKey && event.key.toLowerCase() === "o") {
    event.preventDefault();
    newChat({ push: true });
  } else if (mod && !event.shiftKey && event.key.toLowerCase() === "k") {
    event.preventDefault();
    if (getComputedStyle(ui.toggle).display !== "none") openSidebar();
    ui.search.focus();
    ui.search.select();
  } else if (event.key === "?" && !mod && !typing(event.target)) {
    event.preventDefault();
    ui.help.showModal();
  }
}

/** "light" or "dark" overrides the system's choice; "system" follows it. Kept in localStorage. */
function applyTheme(choice) {
  if (choice === "light" || choice === "dark") {
    document.documentElement.dataset.theme = choice;
    localStorage.setItem(THEME_KEY, choice);
  } else {
    delete document.documentElement.dataset.theme;
    localStorage.removeItem(THEME_KEY);
  }
  announce(`Theme: ${choice}`);
}

// ---- the composer, the sidebar on small screens ---------------------------------------------

// The composer counts once a message is within a tenth of the limit (a code point is one
// character, as the server counts).
const LIMIT_WARNING = 0.9;

/** Whether the message fits the run API's limit; past 90 % of it the composer shows the count. */
/** A message's length against the server's limit (RUN_MAX_MESSAGE_CHARS, in characters): whether
 * it is over, near it (worth showing), and what to say; ``advice`` says what to do when over. */
function measure(message, advice) {
  const limit = config.maxMessageChars;
  const rough = message.length; // UTF-16 units: never fewer than the characters
  const count = rough >= limit * LIMIT_WARNING ? [...message].length : rough;
  const over = count > limit;
  const text = over
    ? `${count.toLocaleString()} of at most ${limit.toLocaleString()} characters: ${advice}`
    : `${count.toLocaleString()} of at most ${limit.toLocaleString()} characters.`;
  return { over, near: count >= limit * LIMIT_WARNING, text };
}

function checkLength(message = ui.input.value) {
  const { over, near, text } = measure(message, "shorten the message, or attach the text as a file.");
  ui.limit.hidden = !near;
  ui.limit.classList.toggle("is-over", over);
  ui.limit.textContent = text;
  ui.send.disabled = over || !state.agentId;
  return !over;
}

function autosize() {
  ui.input.style.height = "auto";
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 240)}px`;
}

function openSidebar() {
  ui.app.dataset.sidebar = "open";
  ui.toggle.setAttribute("aria-expanded", "true");
  ui.scrim.hidden = false;
  ui.newChat.focus(); // into the drawer; not its search box, whose focus opens a phone's keyboard
}

function closeSidebar() {
  if (ui.app.dataset.sidebar !== "open") return;
  ui.app.dataset.sidebar = "closed";
  ui.toggle.setAttribute("aria-expanded", "false");
  ui.scrim.hidden = true;
}

// Files attached in the composer go to My documents (attachments.js), named in the next message.
const attachments = setupAttachments({ root: ui.form, sessionId: () => state.sessionId, maxFileBytes: config.maxFileBytes, announce });

function bind() {
  followTheEnd();
  followOtherTabs();
  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (workflowFields) {
      const text = workflowInput();
      if (text) sendMessage(text);
      return;
    }
    sendMessage(ui.input.value);
  });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendMessage(ui.input.value);
    }
  });
  ui.input.addEventListener("input", () => {
    autosize();
    checkLength();
  });
  ui.stop.addEventListener("click", stopRun);
  document.addEventListener("keydown", onShortcut);
  ui.helpButton.addEventListener("click", () => ui.help.showModal());
  // A dialog's Cancel is a plain button, not a submit button: Enter in the dialog's field submits
  // the form's first submit button, which must be the one that saves (Rename: Enter saves).
  document.querySelectorAll("dialog [data-dialog-cancel]").forEach((button) => {
    button.addEventListener("click", () => button.closest("dialog").close("cancel"));
  });
  ui.theme.value = localStorage.getItem(THEME_KEY) || "system";
  ui.theme.addEventListener("change", () => applyTheme(ui.theme.value));
  ui.newChat.addEventListener("click", () => newChat({ push: true }));
  ui.picker.addEventListener("change", () => {
    const chosen = ui.picker.value;
    if (!state.sessionId) return pickAgent(chosen);
    ui.picker.value = state.agentId; // a conversation belongs to one agent: asked, not switched silently
    askNewChatWith(chosen);
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
  startApprovalBadge(config.user);
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
