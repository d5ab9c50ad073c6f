// The server's JSON API. The page is signed in by the HttpOnly cookie set by `/?token=…`
// (a browser-session credential named after the server's port, never the API token), which
// the browser sends with every same-origin request.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function call(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = data && typeof data.error === 'string' ? data.error : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return data;
}

const id = (s) => encodeURIComponent(s);

export const api = {
  health: () => call('GET', '/api/health'),
  sessions: (q = '') => call('GET', `/api/sessions?limit=100&q=${encodeURIComponent(q)}`),
  session: (sid) => call('GET', `/api/sessions/${id(sid)}`),
  rename: (sid, name) => call('POST', `/api/sessions/${id(sid)}`, { name }),
  remove: (sid) => call('DELETE', `/api/sessions/${id(sid)}`),
  plan: (sid) => call('GET', `/api/sessions/${id(sid)}/plan`),
  checkpoints: (sid) => call('GET', `/api/sessions/${id(sid)}/checkpoints`),
  rewind: (sid, body) => call('POST', `/api/sessions/${id(sid)}/rewind`, body),
  exportUrl: (sid, format) => `/api/sessions/${id(sid)}/export?format=${format}`,
  prompt: (content, sessionId, model, attachments = [], queue = false) => {
    const body = sessionId ? { content, session_id: sessionId } : model ? { content, model } : { content };
    if (attachments.length) body.attachments = attachments;
    if (queue && sessionId) body.queue = true;
    return call('POST', '/api/prompt', body);
  },
  models: () => call('GET', '/api/models'),
  compact: (sid, keep) => call('POST', `/api/sessions/${id(sid)}/compact`, keep ? { keep } : {}),
  switchModel: (sid, model) => call('POST', `/api/sessions/${id(sid)}/model`, { model }),
  memory: () => call('GET', '/api/memory'),
  editFact: (fid, content) => call('POST', `/api/memory/${id(String(fid))}`, { content }),
  acceptFact: (fid) => call('POST', `/api/memory/${id(String(fid))}/accept`, {}),
  deleteFact: (fid) => call('DELETE', `/api/memory/${id(String(fid))}`),
  commands: () => call('GET', '/api/commands'),
  skills: () => call('GET', '/api/skills'),
  trustSkill: (name) => call('POST', `/api/skills/${id(name)}/trust`, {}),
  schedules: () => call('GET', '/api/schedules'),
  runSchedule: (name) => call('POST', `/api/schedules/${id(name)}/run`, {}),
  switchSchedule: (name, on) => call('POST', `/api/schedules/${id(name)}/${on ? 'enable' : 'disable'}`, {}),
  runs: () => call('GET', '/api/runs'),
  cancel: (rid) => call('POST', `/api/runs/${id(rid)}/cancel`, {}),
  answer: (rid, aid, action) => call('POST', `/api/runs/${id(rid)}/approvals/${id(aid)}`, { action }),
  reply: (rid, qid, answer) => call('POST', `/api/runs/${id(rid)}/questions/${id(qid)}`, { answer }),
};
