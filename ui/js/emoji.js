// The tool → emoji table. It mirrors src/tools/emoji.rs (the terminal's tool lines); a Rust
// test keeps the two equal, so change both together.

export const TOOL_EMOJI = Object.freeze({
  read_file: '📖',
  write_file: '📝',
  patch: '🩹',
  search_files: '🔍',
  shell: '💻',
  plan: '📋',
  glob: '📂',
  batch_read: '📚',
  batch_patch: '🧩',
  web_fetch: '🌐',
  web_search: '🔎',
  clarify: '❓',
  delegate_tasks: '🤝',
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
