// The tool → emoji table: the emoji of every row of src/tools/catalog.rs (the one table of
// odek's tools) that has one of its own; a Rust test keeps the two equal, so change both
// together.

export const TOOL_EMOJI = Object.freeze({
  read_file: '📖',
  write_file: '📝',
  search_files: '🔍',
  patch: '🩹',
  glob: '📂',
  batch_read: '📚',
  batch_patch: '🧩',
  shell: '💻',
  background: '⏳',
  delegate_tasks: '🤝',
  web_fetch: '🌐',
  web_search: '🔎',
  browser: '🧭',
  clarify: '❓',
  plan: '📋',
});

export const MCP_EMOJI = '🔌';
export const DEFAULT_EMOJI = '🔧';
export const MCP_SEPARATOR = '__';

/** The emoji shown beside a call of `tool`. */
export function toolEmoji(tool) {
  if (Object.hasOwn(TOOL_EMOJI, tool)) return TOOL_EMOJI[tool];
  if (typeof tool === 'string' && tool.includes(MCP_SEPARATOR)) return MCP_EMOJI;
  return DEFAULT_EMOJI;
}
