/**
 * Text made safe for a terminal: a reply written by a model or a claw must
 * not retitle the window, clear the screen, or overwrite a line. Control
 * sequences (ECMA-48, in 7-bit and 8-bit form) are removed whole, and every
 * other C0/C1 control except newline and tab goes; printable text, emoji and
 * combining marks included, is untouched.
 */

const ESC = 0x1b
const BEL = 0x07
const CAN = 0x18
const SUB = 0x1a
const C1_ST = 0x9c

// Anything that could start a sequence or is a control; its absence is the fast path.
// eslint-disable-next-line no-control-regex
const ANY_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

const isIntermediate = (code: number) => code >= 0x20 && code <= 0x2f
const isCsiParameter = (code: number) => code >= 0x30 && code <= 0x3f
const isCsiFinal = (code: number) => code >= 0x40 && code <= 0x7e
const isEscFinal = (code: number) => code >= 0x30 && code <= 0x7e

/** Index just past a CSI body starting at `from`: parameters, intermediates, one final byte. */
const skipCsi = (text: string, from: number): number => {
  let index = from
  while (index < text.length && isCsiParameter(text.charCodeAt(index))) index++
  while (index < text.length && isIntermediate(text.charCodeAt(index))) index++
  // A character that cannot end the sequence cuts it short; it is then read as ordinary text.
  return index < text.length && isCsiFinal(text.charCodeAt(index)) ? index + 1 : index
}

/**
 * Index just past a string sequence body (OSC, DCS, SOS, PM, APC) starting at
 * `from`: it runs to ST (ESC \ or U+009C) or BEL, and CAN or SUB cancel it, as
 * in terminals. One left open runs to the end of the text, as a terminal would
 * swallow it.
 */
const skipString = (text: string, from: number): number => {
  for (let index = from; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code === BEL || code === C1_ST || code === CAN || code === SUB) return index + 1
    if (code === ESC) return text.charCodeAt(index + 1) === 0x5c ? index + 2 : index
  }
  return text.length
}

/** Index just past the escape sequence whose ESC is at `at`. */
const skipEscape = (text: string, at: number): number => {
  const next = text.charCodeAt(at + 1)
  switch (next) {
    case 0x5b: // [ CSI
      return skipCsi(text, at + 2)
    case 0x5d: // ] OSC
    case 0x50: // P DCS
    case 0x58: // X SOS
    case 0x5e: // ^ PM
    case 0x5f: // _ APC
      return skipString(text, at + 2)
  }
  let index = at + 1
  while (index < text.length && isIntermediate(text.charCodeAt(index))) index++
  // ESC followed by something that cannot end it (a control, a non-ASCII letter): only the ESC goes.
  return index < text.length && isEscFinal(text.charCodeAt(index)) ? index + 1 : at + 1
}

/** Index just past the control (or the sequence it starts) at `at`. */
const skipControl = (text: string, at: number): number => {
  const code = text.charCodeAt(at)
  switch (code) {
    case ESC:
      return skipEscape(text, at)
    case 0x9b: // CSI
      return skipCsi(text, at + 1)
    case 0x9d: // OSC
    case 0x90: // DCS
    case 0x98: // SOS
    case 0x9e: // PM
    case 0x9f: // APC
      return skipString(text, at + 1)
    default:
      return at + 1
  }
}

const isKept = (code: number) => code === 0x0a || code === 0x09 || !((code < 0x20) || (code >= 0x7f && code <= 0x9f))

/** `text` without control sequences or controls, newlines and tabs kept. */
export const stripControlSequences = (text: string): string => {
  if (!ANY_CONTROL.test(text)) return text
  let result = ""
  let start = 0
  let index = 0
  while (index < text.length) {
    if (isKept(text.charCodeAt(index))) {
      index++
      continue
    }
    result += text.slice(start, index)
    index = skipControl(text, index)
    start = index
  }
  return result + text.slice(start)
}
