// The AgentOS REST API as the browser sees it: same-origin fetch with the Django session,
// the CSRF token on writes, and every failure turned into a sentence a person can act on.

export class ApiError extends Error {
  constructor(message, status = 0) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

export const NETWORK_MESSAGE = "Couldn't reach the server. Check your connection and try again.";

function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta && meta.content) return meta.content;
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

const KNOWN_DETAILS = {
  "Agent not found": "This agent is not available any more.",
  "Session not found": "This conversation doesn't exist, or it was deleted.",
  "Run not found": "That reply can't be found any more; it may have been deleted.",
};

export function describeFailure(status, detail) {
  if (typeof detail === "string" && /csrf/i.test(detail)) {
    return "This page is out of date. Reload it and try again.";
  }
  if (status === 401 || status === 403) return "You are signed out. Sign in again to continue.";
  if (Array.isArray(detail) && detail.length) {
    return "The request was not accepted: " + detail.map((item) => item.msg || String(item)).join("; ");
  }
  if (typeof detail === "string" && detail) {
    if (KNOWN_DETAILS[detail]) return KNOWN_DETAILS[detail];
    if (/^Session with id .* not found$|^Agent Session with id .* not found$/.test(detail)) {
      return KNOWN_DETAILS["Session not found"];
    }
    return detail;
  }
  if (status === 404) return "Not found. It may have been deleted.";
  if (status === 409) return "That can't be done right now: the reply is no longer waiting for you.";
  if (status === 429) return "Too many requests right now. Wait a moment and try again.";
  if (status >= 500) return `The server had a problem (error ${status}). Try again in a moment.`;
  return `The request failed (error ${status}).`;
}

async function failureFrom(response) {
  let detail = null;
  try {
    detail = (await response.json()).detail;
  } catch {
    // not JSON (a proxy's error page): the status alone has to do
  }
  return new ApiError(describeFailure(response.status, detail), response.status);
}

/**
 * fetch() with the session cookie and CSRF token; resolves to an OK Response or throws ApiError.
 * ``form``: urlencoded fields; ``multipart``: an object of fields (File or Blob values are sent as
 * files) or a FormData, sent as multipart/form-data (the browser writes its boundary); ``json``.
 */
export async function request(method, url, { form, multipart, json, signal, accept = "application/json" } = {}) {
  const headers = { Accept: accept };
  let body;
  if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = csrfToken();
  if (form) body = new URLSearchParams(form); // AgentOS run routes take form fields, not JSON
  if (multipart) body = multipart instanceof FormData ? multipart : toFormData(multipart);
  if (json !== undefined) {
    body = JSON.stringify(json);
    headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(url, { method, headers, body, credentials: "same-origin", signal, cache: "no-store" });
  } catch (error) {
    if (error && error.name === "AbortError") throw error;
    throw new ApiError(NETWORK_MESSAGE, 0);
  }
  if (response.redirected && new URL(response.url).pathname.startsWith("/chat/login")) {
    throw new ApiError(describeFailure(401, null), 401);
  }
  if (!response.ok) throw await failureFrom(response);
  return response;
}

function toFormData(fields) {
  const data = new FormData();
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    if (value instanceof Blob) data.append(key, value, value.name || key);
    else data.append(key, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  return data;
}

export async function getJSON(url, options) {
  const response = await request("GET", url, options);
  return response.json();
}

export function query(path, params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

const enc = encodeURIComponent;
const RUN_STATUSES = ["PENDING", "RUNNING", "PAUSED", "COMPLETED", "ERROR", "CANCELLED", "REGENERATED"];

/** The chat names a team "team:<id>" (an agent by its bare id): its runs live under /teams. */
export const TEAM_PREFIX = "team:";
/** A workflow is "workflow:<id>": its runs live under /workflows. */
export const WORKFLOW_PREFIX = "workflow:";

function base(componentKey) {
  if (componentKey.startsWith(TEAM_PREFIX)) return `/teams/${enc(componentKey.slice(TEAM_PREFIX.length))}`;
  if (componentKey.startsWith(WORKFLOW_PREFIX)) return `/workflows/${enc(componentKey.slice(WORKFLOW_PREFIX.length))}`;
  return `/agents/${enc(componentKey)}`;
}

/**
 * The routes the chat uses; a run's first argument is a component key (an agent's id, or a team's
 * "team:<id>"). ``userId`` rides along on every call: the server ignores it for a
 * logged-in browser (the session's user wins), and it keeps the page to the user's own rows if
 * the login has lapsed on a server that runs without API authentication.
 */
export function makeApi(userId) {
  const who = { user_id: userId };
  // A factory component's factory_input (JSON text), sent with every run it starts or continues:
  // a continue builds the component again from it, as AgentOS does.
  let factoryInput = null;
  const factory = () => (factoryInput ? { factory_input: factoryInput } : {});
  return {
    setFactoryInput: (json) => {
      factoryInput = json || null;
    },
    agents: () => getJSON("/agents"),
    // The OS's configuration: the chat reads its quick prompts (chat.quick_prompts, by component id).
    config: () => getJSON("/config"),
    teams: () => getJSON("/teams"),
    workflows: () => getJSON("/workflows"),
    // The list holds summaries; a workflow's steps and input_schema come with its own page.
    workflow: (id) => getJSON(`/workflows/${enc(id)}`),
    // No type: agent, team and workflow conversations together, newest first. Conversations only:
    // the sessions evals and schedules make are found from their own pages.
    sessions: ({ page = 1, limit = 30, name = "" } = {}) =>
      getJSON(query("/sessions", { page, limit, q: name, origin: "chat,api", sort_by: "updated_at", sort_order: "desc", ...who })),
    // Every status named: runs still executing too (the default listing leaves them out, as
    // AgentOS does), so a reopened conversation resumes its live runs.
    // Every version of every message too (branches=all): the version switcher reads them.
    sessionRuns: (id) => {
      const path = query(`/sessions/${enc(id)}/runs`, { branches: "all", ...who });
      return getJSON(`${path}${path.includes("?") ? "&" : "?"}${RUN_STATUSES.map((status) => `status=${status}`).join("&")}`);
    },
    // Show another version of a message: its branch becomes the conversation's active one.
    activateBranch: (id, runId) => request("POST", `/chat/api/sessions/${enc(id)}/branch`, { json: { run_id: runId } }),
    renameSession: (id, name) => request("POST", query(`/sessions/${enc(id)}/rename`, who), { json: { session_name: name } }),
    deleteSession: (id) => request("DELETE", query(`/sessions/${enc(id)}`, who)),
    run: (agentId, runId, sessionId) =>
      getJSON(query(`${base(agentId)}/runs/${enc(runId)}`, { session_id: sessionId, ...who })),
    startRun: (agentId, { message, sessionId }, signal) =>
      request("POST", `${base(agentId)}/runs`, {
        // Background runs are durable: a reload or a dropped connection does not stop them.
        form: { message, stream: "true", ...factory(), background: "true", ...who, ...(sessionId ? { session_id: sessionId } : {}) },
        signal,
        accept: "text/event-stream, application/json",
      }),
    continueRun: (agentId, runId, { sessionId, tools, background = true }, signal) =>
      request("POST", `${base(agentId)}/runs/${enc(runId)}/continue`, {
        form: { session_id: sessionId, tools: JSON.stringify(tools), stream: "true", ...factory(), ...(background ? { background: "true" } : {}), ...who },
        signal,
        accept: "text/event-stream, application/json",
      }),
    // A paused workflow goes on with its step_requirements answered, in the background.
    continueWorkflow: (key, runId, { sessionId, requirements }, signal) =>
      request("POST", `${base(key)}/runs/${enc(runId)}/continue`, {
        form: { session_id: sessionId, step_requirements: JSON.stringify(requirements), stream: "true", ...factory(), background: "true", ...who },
        signal,
        accept: "text/event-stream, application/json",
      }),
    // A new answer to a finished run's last question, streamed; the old one is marked REGENERATED
    // once the new one is complete. In the background, like every run the page starts: durable.
    regenerateRun: (agentId, runId, { sessionId }, signal) =>
      request("POST", `${base(agentId)}/runs/${enc(runId)}/continue`, {
        form: { session_id: sessionId, regenerate: "true", stream: "true", ...factory(), background: "true", ...who },
        signal,
        accept: "text/event-stream, application/json",
      }),
    // A new version of a sent message: the run's transcript up to ``continueFrom`` (its own user
    // message), then ``input``, answered in a new run beside it (a fork), in the background.
    editRun: (agentId, runId, { sessionId, input, continueFrom }, signal) =>
      request("POST", `${base(agentId)}/runs/${enc(runId)}/continue`, {
        form: { session_id: sessionId, input, continue_from: String(continueFrom), fork: "true", stream: "true", ...factory(), background: "true", ...who },
        signal,
        accept: "text/event-stream, application/json",
      }),
    resumeRun: (agentId, runId, { sessionId, lastEventIndex }, signal) =>
      request("POST", `${base(agentId)}/runs/${enc(runId)}/resume`, {
        form: {
          session_id: sessionId,
          ...who,
          ...(lastEventIndex != null && lastEventIndex >= 0 ? { last_event_index: lastEventIndex } : {}),
        },
        signal,
        accept: "text/event-stream, application/json",
      }),
    cancelRun: (agentId, runId, sessionId) =>
      request("POST", query(`${base(agentId)}/runs/${enc(runId)}/cancel`, { session_id: sessionId, ...who })),
  };
}
