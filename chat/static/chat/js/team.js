// A team's reply: each member's run is a step under it (name, status, its own text and tool calls),
// filled live from the members' events in the team's stream, and rebuilt from the stored child runs
// (parent_run_id = the team's run) when the conversation is opened again.
import { needsDecision, storedTools } from "./render.js";

const DELEGATION = "delegate_task_to_member";

/** The leader's hand-off to a member: shown as that member's step, not as a tool card. */
export const isDelegation = (tool) => tool?.tool_name === DELEGATION;

const STATE_OF_STATUS = { RUNNING: "running", PENDING: "running", PAUSED: "paused", ERROR: "error", CANCELLED: "cancelled" };

function memberName(team, memberId) {
  return (team?.members || []).find((member) => member.id === memberId)?.name || memberId || "Member";
}

/** Apply one member's stream frame to its step; false when the frame shows nothing. */
export function applyMemberFrame(turn, { event: name, data }, team) {
  if (!data.run_id) return false;
  // A member may itself be a team: its own events are named Team* too.
  const event = data.team_id && name.startsWith("Team") ? name.slice(4) : name;
  const show = ["RunStarted", "RunContinued", "RunContent", "ToolCallStarted", "ToolCallCompleted", "ToolCallError", "RunCompleted", "RunPaused", "RunError", "RunCancelled"];
  if (!show.includes(event)) return false;
  const step = turn.step(data.run_id, data.agent_name || data.team_name || memberName(team, data.agent_id || data.team_id));
  const tool = data.tool && !isDelegation(data.tool) ? data.tool : null;
  switch (event) {
    case "RunStarted":
    case "RunContinued":
      step.setState("running");
      break;
    case "RunContent":
      if (typeof data.content === "string") step.appendText(data.content);
      else if (data.content) step.setFinalText(data.content);
      break;
    case "ToolCallStarted":
      if (tool) step.toolStarted(tool);
      break;
    case "ToolCallCompleted":
      if (tool) step.toolFinished(tool);
      break;
    case "ToolCallError":
      if (tool) step.toolFinished(tool, data.error || "The tool failed.");
      break;
    case "RunCompleted":
      // AgentOS sends RunCompleted after RunCancelled: a stopped member stays stopped.
      if (step.el.dataset.state === "cancelled") break;
      step.setFinalText(data.content);
      step.setState("done");
      break;
    case "RunPaused":
      for (const one of data.tools || []) turn.stepOfTool.set(one.tool_call_id, step);
      step.setState("paused");
      break;
    case "RunError":
      step.setFinalText(data.content);
      step.setState("error");
      break;
    case "RunCancelled":
      step.setState("cancelled");
      break;
  }
  return true;
}

/**
 * The steps of a stored team run, in the order the leader delegated, from its child runs.
 * Returns [{step, run, name}] for what the caller decides (a paused member's approval).
 */
export function renderMemberSteps(turn, teamRun, runs, { team, continuedAt } = {}) {
  // A regenerated team run answers again from its members' earlier work: its delegations name
  // child runs of the run it replaced.
  const byId = new Map(runs.map((one) => [one.run_id, one]));
  const delegated = (teamRun.tools || []).filter(isDelegation).map((tool) => tool.child_run_id).filter((id) => byId.get(id)?.parent_run_id);
  const own = runs.filter((one) => one.parent_run_id === teamRun.run_id).map((one) => one.run_id);
  const order = [...new Set([...delegated, ...own])];
  return order.map((runId) => {
    const member = byId.get(runId);
    const name = memberName(team, member.agent_id || member.team_id);
    const step = turn.step(runId, name);
    for (const tool of storedTools(member)) {
      if (isDelegation(tool)) continue;
      if (needsDecision(tool)) {
        turn.stepOfTool.set(tool.tool_call_id, step);
        continue;
      }
      if (tool.confirmed === true || tool.confirmed === false || tool.answered) step.decision(tool, { by: member.user_id, at: continuedAt });
      step.toolFinished(tool);
    }
    // A paused member's content is the server's note that it waits, not the member's words.
    if (member.status !== "PAUSED") step.setFinalText(member.content);
    step.setState(STATE_OF_STATUS[member.status] || "done");
    return { step, run: member, name };
  });
}

/** The tool calls paused members wait on: what the team's continue decides. */
export function waitingMemberTools(members) {
  return members.filter(({ run }) => run.status === "PAUSED").flatMap(({ run }) => (run.tools || []).filter(needsDecision));
}

/** tool_call_id -> the name of the member that asks for it. */
export function memberAskers(members) {
  return new Map(members.flatMap(({ run, name }) => (run.tools || []).filter(needsDecision).map((tool) => [tool.tool_call_id, name])));
}
