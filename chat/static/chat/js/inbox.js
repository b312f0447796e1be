// My approvals: the signed-in user's calls that wait for an operator (pending first), and the
// ones decided, with who decided and their note; each links to its conversation. Kept fresh
// while the page is open (the /approvals API shows a browser user only their own).
import { ApiError } from "./api.js";
import { approvalApi, decisionText, noteOf, pollWhileVisible } from "./approvals.js";
import { el, when } from "./render.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const $ = (id) => document.getElementById(id);
const ui = { list: $("inbox-list"), empty: $("inbox-empty"), count: $("inbox-count"), notice: $("inbox-notice") };
const REFRESH_MS = 5000;
const STATUS = { pending: "Waiting", approved: "Approved", rejected: "Rejected", expired: "Expired", cancelled: "Cancelled" };

function showNotice(error) {
  const message = error instanceof ApiError ? error.message : "Something unexpected happened in the page. Reload it and try again.";
  ui.notice.replaceChildren(el("span", { text: message }));
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    ui.notice.append(" ", el("a", { href: `${config.loginUrl}?next=${encodeURIComponent(location.pathname)}`, text: "Sign in" }));
  }
  ui.notice.hidden = false;
}

/** ``to: bob, amount: 100``: the arguments on one line, each value cut short. */
function argsSummary(args) {
  const entries = Object.entries(args || {});
  if (!entries.length) return "no arguments";
  return entries.map(([key, value]) => {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return `${key}: ${text.length > 60 ? `${text.slice(0, 59)}…` : text}`;
  }).join(", ");
}

function sourceOf(approval) {
  const kind = approval.source_type === "team" ? "Team" : approval.source_type === "workflow" ? "Workflow" : "Agent";
  const name = approval.source_name || approval.team_id || approval.workflow_id || approval.agent_id || "";
  return name ? `${kind} ${name}` : kind;
}

function item(approval) {
  const status = el("span", { class: "inbox-status", "data-status": approval.status, text: STATUS[approval.status] || approval.status });
  const head = el("p", { class: "inbox-title" }, el("code", { text: approval.tool_name || "a tool" }), " ", status);
  const args = el("p", { class: "inbox-args", title: JSON.stringify(approval.tool_args || {}), text: argsSummary(approval.tool_args) });
  const meta = el("p", { class: "inbox-meta muted small" }, `${sourceOf(approval)} · asked `, el("time", { text: when(approval.created_at) }));
  const outcome = approval.status === "pending"
    ? el("p", { class: "inbox-outcome muted small", text: "Waits for an operator's approval; the reply is paused until then." })
    : el("p", { class: "inbox-outcome small", "data-decision": approval.status }, decisionText(approval),
      approval.resolved_at ? el("span", { class: "approval-when", text: ` · ${when(approval.resolved_at)}` }) : "");
  const link = el("a", { class: "inbox-open", href: `${config.sessionUrl}${encodeURIComponent(approval.session_id)}/`, text: "Open the conversation" });
  return el("li", { class: "inbox-item", "data-approval-id": approval.id, "data-status": approval.status, "data-note": noteOf(approval) },
    head, args, meta, outcome, link);
}

/** Pending first (oldest waiting longest on top), then the decided ones, newest first. */
function ordered(approvals) {
  const pending = approvals.filter((one) => one.status === "pending").sort((a, b) => a.created_at - b.created_at);
  const decided = approvals.filter((one) => one.status !== "pending").sort((a, b) => (b.resolved_at || b.created_at) - (a.resolved_at || a.created_at));
  return [...pending, ...decided];
}

async function refresh() {
  // Every pending one (they come first), and the newest decided ones under them.
  const [waiting, recent] = await Promise.all([
    approvalApi.list(config.user, { status: "pending" }),
    approvalApi.list(config.user, { limit: 50 }),
  ]);
  const byId = new Map([...(recent.data || []), ...(waiting.data || [])].map((one) => [one.id, one]));
  const approvals = ordered([...byId.values()]);
  const pending = approvals.filter((one) => one.status === "pending").length;
  ui.list.replaceChildren(...approvals.map(item));
  ui.empty.hidden = approvals.length > 0;
  ui.count.textContent = approvals.length ? `${pending} waiting · ${approvals.length - pending} decided` : "";
  ui.notice.hidden = true;
  document.title = `${pending ? `(${pending}) ` : ""}My approvals · ${document.body.dataset.siteName}`;
  return false;
}

refresh()
  .catch(showNotice)
  .finally(() => {
    document.body.dataset.ready = "true";
    pollWhileVisible(() => refresh().catch(showNotice), REFRESH_MS, () => true, { now: false });
  });
