/**
 * `{placeholders}` in `query`: `{name}` is replaced by the matrix value of `name`; `{{` and
 * `}}` stand for literal braces; any other brace is literal text.
 */

export interface PlaceholderRef {
  name: string;
  /** Offset of the `{` in the template. */
  offset: number;
}

/** A parsed template: literal parts interleaved with placeholder names. */
export interface Template {
  /** `literals.length === names.length + 1`. */
  literals: string[];
  names: string[];
  refs: PlaceholderRef[];
}

const TOKEN = /\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function parseTemplate(text: string): Template {
  const literals: string[] = [];
  const names: string[] = [];
  const refs: PlaceholderRef[] = [];
  let current = '';
  let last = 0;
  for (const match of text.matchAll(TOKEN)) {
    current += text.slice(last, match.index);
    last = match.index + match[0].length;
    const name = match[1];
    if (name === undefined) {
      current += match[0][0];
      continue;
    }
    literals.push(current);
    current = '';
    names.push(name);
    refs.push({ name, offset: match.index });
  }
  literals.push(current + text.slice(last));
  return { literals, names, refs };
}

/** Fill a template; `lookup` gives the text for each placeholder name. */
export function fillTemplate(template: Template, lookup: (name: string) => string): string {
  let out = template.literals[0]!;
  for (let i = 0; i < template.names.length; i++) {
    out += lookup(template.names[i]!) + template.literals[i + 1]!;
  }
  return out;
}

/** How a matrix value reads inside a query. */
export function renderPlaceholderValue(value: unknown): string {
  return typeof value === 'string' ? value : String(value);
}
