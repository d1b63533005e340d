/**
 * Where a text stops being JSON, without quoting it. JSON.parse's own message quotes the text
 * around the error (`Unexpected token 'r', "root:x:0:0"... is not valid JSON`), which is how
 * `feedmirror validate /etc/shadow` printed the file's first bytes. This scanner walks the
 * grammar (RFC 8259) only to find the offset of the first byte that cannot continue it; the
 * caller reports line and column. Used only after JSON.parse has failed.
 */
export interface JsonStop {
  /** 1-based line and column of the first offending character (or of the end of input). */
  line: number;
  column: number;
  offset: number;
  /** 'end': the text ended too soon; 'character': a character that cannot be there. */
  reason: 'end' | 'character';
}

class Stop extends Error {
  constructor(readonly offset: number) {
    super('stop');
  }
}

export function whereJsonStops(text: string): JsonStop {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const fail = (): never => {
    throw new Stop(i);
  };
  const expect = (word: string) => {
    for (const ch of word) {
      if (text[i] !== ch) fail();
      i++;
    }
  };
  const string = () => {
    expect('"');
    for (;;) {
      if (i >= text.length) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return;
      }
      if (c < 0x20) fail();
      if (c === 0x5c) {
        i++;
        const e = text[i];
        if (e === 'u') {
          i++;
          for (let k = 0; k < 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i] ?? '')) fail();
            i++;
          }
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else fail();
      } else i++;
    }
  };
  const digits = () => {
    const start = i;
    while (/[0-9]/.test(text[i] ?? '')) i++;
    if (i === start) fail();
  };
  const number = () => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else digits();
    if (text[i] === '.') {
      i++;
      digits();
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      digits();
    }
  };
  const value = (depth: number): void => {
    if (depth > 10_000) fail();
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        string();
        ws();
        expect(':');
        value(depth + 1);
        ws();
        if (text[i] === ',') i++;
        else return expect('}');
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value(depth + 1);
        ws();
        if (text[i] === ',') i++;
        else return expect(']');
      }
    }
    if (c === '"') return string();
    if (c === 't') return expect('true');
    if (c === 'f') return expect('false');
    if (c === 'n') return expect('null');
    if (c === '-' || /[0-9]/.test(c ?? '')) return number();
    fail();
  };
  let offset = text.length;
  try {
    if (text.charCodeAt(0) === 0xfeff) i = 1;
    value(0);
    ws();
    if (i < text.length) fail();
  } catch (e) {
    if (!(e instanceof Stop)) throw e;
    offset = e.offset;
  }
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - (before.lastIndexOf('\n') + 1) + 1;
  return { line, column, offset, reason: offset >= text.length ? 'end' : 'character' };
}
