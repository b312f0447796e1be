// Server-sent events from a fetch() body. EventSource can't POST, and AgentOS run routes are POSTs.
// Frames are `event: Name\ndata: {json}\n\n`; `:` lines are keep-alive comments.

function parseFrame(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return null;
  try {
    const payload = JSON.parse(data.join("\n"));
    return { event: (payload && payload.event) || name, data: payload };
  } catch {
    return null; // a torn or foreign frame: skip it, as AgentOS clients do
  }
}

/** Calls onFrame({event, data}) for every frame until the stream ends (or the fetch is aborted). */
export async function readEventStream(response, onFrame) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = parseFrame(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (frame) onFrame(frame);
    }
  }
  const last = parseFrame(buffer);
  if (last) onFrame(last);
}
