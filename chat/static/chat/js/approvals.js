// Approvals an operator decides (tools marked @approval): the run's owner cannot approve them
// (their continue is refused), so the chat shows them as waiting, follows the decision through
// the /approvals API, and counts the pending ones in the sidebar's "Approvals" badge.
import { getJSON, query } from "./api.js";
import { el, pretty, when } from "./render.js";

const enc = encodeURIComponent;
const POLL_MS = 3000; // a waiting card, and the inbox page: the decision shows within seconds
const BADGE_MS = 15000;

/** A paused tool call an operator has to approve: not the user's to decide. */
export function needsOperator(tool) {
  return tool?.approval_type === "required" && Boolean(tool.approval_id);
}

export const approvalApi = {
  get: (id) => getJSON(`/approvals/${enc(id)}`),
  count: (userId) => getJSON(query("/approvals/count", { user_id: userId })),
  list: (userId, { status, limit = 100 } = {}) => getJSON(query("/approvals", { user_id: userId, status, limit })),
};

/** The resolver's note, where the API keeps it (resolution_data's ``note``, or ``reason``). */
export function noteOf(approval) {
  const data = approval?.resolution_data || {};
  return String(data.note || data.reason || "");
}

/** "Approved by root." / "Rejected by root: not today." */
export function decisionText(approval) {
  const verb = approval.status === "rejected" ? "Rejected" : approval.status === "approved" ? "Approved" : "Decided";
  const by = approval.resolved_by ? ` by ${approval.resolved_by}` : "";
  const note = noteOf(approval);
  return `${verb}${by}${note ? `: ${note}` : "."}`;
}

/** Calls ``tick`` (first at once, unless ``now`` is false) and every ``ms`` while the page is
 * visible, and at once when it is shown again; ``tick`` returning true, or ``alive()`` turning
 * false, stops it. */
export function pollWhileVisible(tick, ms, alive = () => true, { now = true } = {}) {
  let timer = null;
  let stopped = false;
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", onShow);
    window.removeEventListener("focus", onShow);
  };
  let busy = false; // a focus during a tick does not start a second round of ticks
  const run = async () => {
    clearTimeout(timer);
    if (stopped || busy) return;
    if (!alive()) return stop();
    let done = false;
    busy = true;
    try {
      done = await tick();
    } catch {
      // a failed poll (the network, a restart) is tried again at the next one
    } finally {
      busy = false;
    }
    if (done) return stop();
    if (!stopped && !document.hidden) timer = setTimeout(run, ms);
  };
  const onShow = () => !document.hidden && run();
  document.addEventListener("visibilitychange", onShow);
  window.addEventListener("focus", onShow);
  if (now) setTimeout(run, 0); // after the caller has put its element in the page (``alive`` looks for it)
  else timer = setTimeout(run, ms);
  return stop;
}

function decisionLine(approval) {
  const stamp = when(approval.resolved_at);
  return el("p", { class: "approval-outcome operator-decision", "data-decision": approval.status },
    decisionText(approval), stamp ? " " : "", stamp ? el("span", { class: "approval-when", text: stamp }) : "");
}

/**
 * The card of a paused call an operator decides: it says the run waits, polls the approval, and
 * once it is decided shows by whom; ``onContinued`` is called (once) when the run has left its
 * pause, to show the continuation.
 */
export function operatorCard(tool, { onContinued } = {}) {
  const status = el("p", { class: "approval-hint operator-status", text: "Waiting for an operator's approval…" });
  const card = el("div", { class: "operator-approval", role: "group", "aria-label": "Waiting for an operator's approval", "data-approval-id": tool.approval_id, "data-state": "pending" },
    el("p", { class: "approval-title" }, "The agent wants to run ", el("code", { text: tool.tool_name || "a tool" }), ": an operator approves it first."),
    el("pre", { class: "tool-args", "aria-label": "Arguments" }, pretty(tool.tool_args || {})),
    el("p", { class: "muted small operator-explain", text: "You can't approve this yourself. Once an operator decides, the reply goes on here by itself." }),
    status);
  let shown = false;
  let counted = false;
  pollWhileVisible(async () => {
    const approval = await approvalApi.get(tool.approval_id);
    if (!counted) {
      counted = true;
      refreshBadge(); // a new pending one, most likely: the badge counts it now, not at its next poll
    }
    if (approval.status === "pending") return false;
    if (!shown) {
      shown = true;
      card.dataset.state = approval.status;
      card.setAttribute("aria-label", decisionText(approval));
      status.replaceWith(decisionLine(approval));
      card.querySelector(".operator-explain")?.remove();
      refreshBadge();
    }
    if (approval.run_status === "PAUSED") return false; // decided; its continuation not picked up yet
    onContinued?.(approval);
    return true;
  }, POLL_MS, () => card.isConnected);
  return card;
}

/** Where a decided operator approval is recorded in its run's reply: who decided, with the note. */
export function operatorRecord(tool) {
  const line = el("p", { class: "approval-record operator-record", "data-decision": tool.confirmed === false ? "rejected" : "approved" },
    `${tool.confirmed === false ? "Rejected" : "Approved"} by an operator: `, el("code", { text: tool.tool_name || "the tool" }), ".");
  approvalApi.get(tool.approval_id).then((approval) => {
    if (approval.status === "pending") return;
    const note = noteOf(approval);
    const stamp = when(approval.resolved_at);
    line.dataset.decision = approval.status;
    line.replaceChildren(`${approval.status === "rejected" ? "Rejected" : "Approved"} by ${approval.resolved_by || "an operator"}: `,
      el("code", { text: tool.tool_name || "the tool" }), `${note ? ` “${note}”` : ""}${stamp ? ` on ${stamp}` : ""}.`);
  }).catch(() => {}); // the generic line stays
  return line;
}

// ---- the sidebar's badge --------------------------------------------------------------------

let badgeTick = null;

/** The pending count on the "Approvals" link, kept fresh while the page is visible. */
export function startApprovalBadge(userId) {
  const badge = document.getElementById("approvals-badge");
  const link = document.getElementById("my-approvals");
  if (!badge || !link) return;
  badgeTick = async () => {
    const { count } = await approvalApi.count(userId);
    badge.textContent = count > 99 ? "99+" : String(count);
    badge.hidden = !count;
    link.setAttribute("aria-label", count ? `Approvals, ${count} pending` : "Approvals");
    return false;
  };
  pollWhileVisible(badgeTick, BADGE_MS);
}

function refreshBadge() {
  badgeTick?.().catch(() => {});
}
