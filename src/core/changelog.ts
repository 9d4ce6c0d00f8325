/**
 * The change log section of one version, used as the text of its GitHub release.
 *
 * A section starts at a level-2 ATX heading naming the version and ends before the next heading of
 * level 1 or 2 (`###` subsections belong to it). Recognised headings (Keep a Changelog and the
 * usual variants, with up to three spaces of indentation as in CommonMark):
 *
 *     ## 1.2.0                      ## v1.2.0 (2026-01-31)
 *     ## [1.2.0]                    ## [1.2.0] - 2026-01-31
 *     ## [v1.2.0](https://…/compare/v1.1.0...v1.2.0) (2026-01-31)
 *
 * The version must be followed by whitespace, the end of the line or (bracketed) `]`, so `1.2.0`
 * does not match `1.2.01`, `1.2.0-beta.1` or `11.2.0`. Lines inside fenced code blocks are never
 * headings (a `# comment` in a shell example does not end the section). Link reference
 * definitions of versions (`[1.2.0]: https://…`, `[unreleased]: …`) trailing the section are left
 * out: Keep a Changelog puts them at the end of the file, i.e. in the oldest version's section.
 */

export class ChangelogSectionMissingError extends Error {
  override readonly name = 'ChangelogSectionMissingError';
  readonly version: string;
  readonly file: string | undefined;
  /** True when the heading exists but its section has no text. */
  readonly empty: boolean;

  constructor(version: string, options: { file?: string; empty?: boolean } = {}) {
    const where = options.file ?? 'the change log';
    const v = stripV(version);
    super(
      options.empty
        ? `${where}: the section for version ${v} is empty; write the release notes under its heading`
        : `${where} has no section for version ${v} (add a heading such as "## [${v}] - YYYY-MM-DD")`,
    );
    this.version = v;
    this.file = options.file;
    this.empty = options.empty ?? false;
  }
}

export interface ChangelogSection {
  /** 1-based line number of the version's heading. */
  line: number;
  /** The heading line as written. */
  heading: string;
  /** The section's text, trimmed; '' when the section is empty. */
  body: string;
}

const stripV = (version: string): string => version.trim().replace(/^v(?=\d)/i, '');
const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** An opening or closing code fence: 3+ backticks or tildes, indented at most 3 spaces. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** An ATX heading of level 1 or 2 (`###` and deeper stay inside a section). */
const SECTION_END = /^ {0,3}#{1,2}(?:[ \t]|$)/;
/** A link reference definition whose label is a version or "unreleased". */
const VERSION_LINK_DEFINITION = /^ {0,3}\[(?:unreleased|v?\d+\.\d+[^\]]*)\]:[ \t]*\S/i;

/** The heading pattern for one version (see the module comment). */
function changelogHeadingPattern(version: string): RegExp {
  const v = escapeRegex(stripV(version));
  return new RegExp(`^ {0,3}##[ \\t]+(?:\\[[ \\t]*v?${v}[ \\t]*\\]|v?${v}(?=[ \\t]|$))`, 'i');
}

/** The section of `version` with where its heading is, or undefined when there is no heading for it. */
export function findChangelogSection(text: string, version: string): ChangelogSection | undefined {
  const lines = text.split(/\r\n|\r|\n/);
  const heading = changelogHeadingPattern(version);
  let fence: string | undefined;
  let start = -1;
  let end = lines.length;
  for (const [index, line] of lines.entries()) {
    const marker = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      // A closing fence uses the same character, at least as many times, and nothing else.
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      continue;
    }
    if (marker) {
      fence = marker;
      continue;
    }
    if (start < 0) {
      if (heading.test(line)) start = index;
    } else if (SECTION_END.test(line)) {
      end = index;
      break;
    }
  }
  if (start < 0) return undefined;

  const body = lines.slice(start + 1, end);
  // Drop the trailing version link definitions (and the blank lines around them).
  while (body.length > 0) {
    const last = body.at(-1) ?? '';
    if (last.trim() === '' || VERSION_LINK_DEFINITION.test(last)) body.pop();
    else break;
  }
  return { line: start + 1, heading: lines[start] ?? '', body: body.join('\n').trim() };
}

/**
 * The text under the heading of `version` (a leading `v` is ignored: `v1.2.0` and `1.2.0` are the
 * same), trimmed; '' for an empty section, undefined when the change log has no such heading.
 */
export function extractChangelogSection(text: string, version: string): string | undefined {
  return findChangelogSection(text, version)?.body;
}

/**
 * The release notes of a version whose change log has no entry for it (no section, or an empty
 * one): a version is published without one (the spec does not ask for it), and its notes say so
 * rather than being blank.
 */
export function missingEntryNotes(version: string, file = 'CHANGELOG.md'): string {
  return `The change log (${file}) has no entry for version ${stripV(version)}.`;
}

/** Like `extractChangelogSection`, but throws `ChangelogSectionMissingError` for a missing or empty section. */
export function requireChangelogSection(text: string, version: string, file?: string): string {
  const body = extractChangelogSection(text, version);
  if (!body) throw new ChangelogSectionMissingError(version, { file, empty: body === '' });
  return body;
}
