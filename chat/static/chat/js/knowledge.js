// The /knowledge API as My documents and the composer's attachments use it, with the Django
// session: every call is the signed-in user's (their contents and the shared ones), so no
// user_id is sent; the server binds it.
import { ApiError, getJSON, query, request } from "./api.js";

const enc = encodeURIComponent;
const POLL_MS = 1000;

export const knowledge = {
  list: ({ page = 1, limit = 20 } = {}) => getJSON(query("/knowledge/content", { page, limit, sort_by: "created_at", sort_order: "desc" })),
  get: (id) => getJSON(`/knowledge/content/${enc(id)}`),
  // One of file, text_content or url; metadata is a JSON object (the form field is its text).
  add: (fields) => request("POST", "/knowledge/content", { multipart: fields }).then((r) => r.json()),
  refresh: (id) => request("POST", `/knowledge/content/${enc(id)}/refresh`).then((r) => r.json()),
  remove: (id) => request("DELETE", `/knowledge/content/${enc(id)}`).then((r) => r.json()),
  update: (id, { metadata }) =>
    request("PATCH", `/knowledge/content/${enc(id)}`, { form: { metadata: JSON.stringify(metadata) } }).then((r) => r.json()),
  search: (text, { limit = 10 } = {}) =>
    request("POST", "/knowledge/search", { json: { query: text, search_type: "hybrid", max_results: limit, meta: { limit, page: 1 } } }).then((r) => r.json()),
};

/** 1536 -> "1.5 KB": the size AgentOS sends as a string of bytes, for a person. */
export function humanSize(bytes) {
  const value = Number(bytes);
  if (bytes === null || bytes === undefined || bytes === "" || !Number.isFinite(value)) return "";
  if (value < 1024) return value === 1 ? "1 byte" : `${value} bytes`;
  const units = ["KB", "MB", "GB", "TB"];
  let size = value / 1024;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${size >= 10 ? Math.round(size) : size.toFixed(1).replace(/\.0$/, "")} ${units[unit]}`;
}

/** A content's kind in words, from AgentOS's ``type`` (manual, url, or a media type) and its name. */
export function kindOf(content) {
  if (content.type === "manual") return "Note";
  if (content.type === "url") return "Web page";
  const name = (content.file_name || content.name || "").toLowerCase();
  const ext = name.includes(".") ? name.split(".").pop() : "";
  const byExt = { pdf: "PDF", docx: "Word", md: "Markdown", markdown: "Markdown", txt: "Text", csv: "CSV", json: "JSON", html: "HTML", htm: "HTML" };
  if (byExt[ext]) return byExt[ext];
  const type = content.type || "";
  if (type === "application/pdf") return "PDF";
  if (type.startsWith("text/")) return "Text";
  return ext ? ext.toUpperCase() : "File";
}

export const isProcessing = (content) => content.status === "processing";

/** The status line: what a person reads, and what a screen reader announces when it changes. */
export function statusText(content) {
  if (content.status === "processing") return "Processing…";
  if (content.status === "failed") return `Failed: ${reason(content.status_message)}`;
  const count = content.chunk_count || 0;
  const passages = count === 1 ? "1 passage" : `${count} passages`;
  if (content.status === "partial") return `Partly ready: ${passages}`;
  return `Ready: ${passages}`;
}

function reason(message) {
  const text = (message || "").trim();
  if (!text) return "it could not be read.";
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** Why an upload was refused, as one sentence naming it (413 too large, 422, 429, the network). */
export function uploadFailure(error, label, maxBytes) {
  const what = label ? `“${label}”` : "It";
  if (!(error instanceof ApiError)) return `${what} could not be added: something unexpected happened in the page. Reload it and try again.`;
  if (error.status === 413) {
    return `${what} is too large to add${maxBytes ? `: a document can be at most ${humanSize(maxBytes)}` : ""}.`;
  }
  if (error.status === 429) return `${what} was not added: the server is busy with other documents. Wait a moment and try again.`;
  const message = error.message.replace(/^The request was not accepted: /, "");
  return `${what} was not added: ${message.charAt(0).toLowerCase()}${message.slice(1)}${/[.!?]$/.test(message) ? "" : "."}`;
}

/**
 * Polls a processing content until its ingestion ends, calling ``onChange`` with each new
 * version (and the last); stops when ``isAlive()`` turns false (the row left the page).
 */
export async function followUntilDone(content, { onChange, isAlive = () => true, interval = POLL_MS } = {}) {
  let current = content;
  let failures = 0;
  while (isProcessing(current) && isAlive()) {
    await new Promise((resolve) => setTimeout(resolve, interval));
    if (!isAlive()) return current;
    try {
      const next = await knowledge.get(current.id);
      failures = 0;
      if (next.status !== current.status || next.chunk_count !== current.chunk_count) onChange(next);
      current = next;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return current; // deleted elsewhere
      failures += 1; // a blip of the network: keep trying, more slowly
      if (failures > 30) return current;
      await new Promise((resolve) => setTimeout(resolve, interval * Math.min(failures, 5)));
    }
  }
  return current;
}
