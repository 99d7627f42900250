/**
 * What a downloaded attachment really is, from its bytes: the image formats an agent takes
 * (PNG, JPEG, GIF, WebP, by their file signatures), and whether a file is text (valid
 * UTF-8 without NUL bytes). The `m` type in the message is the poster's claim; this is the
 * check of it.
 */

/** The image types ACP image blocks carry (Anthropic's API takes these four). */
export type ImageType = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

const startsWith = (b: Uint8Array, sig: number[], at = 0) => sig.every((v, i) => b[at + i] === v);

/** The image type the bytes begin with, or undefined when they are no image of these formats. */
export function imageTypeOf(b: Uint8Array): ImageType | undefined {
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (startsWith(b, [0xff, 0xd8, 0xff])) return "image/jpeg";
  if (startsWith(b, [0x47, 0x49, 0x46, 0x38]) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61) return "image/gif";
  if (startsWith(b, [0x52, 0x49, 0x46, 0x46]) && startsWith(b, [0x57, 0x45, 0x42, 0x50], 8)) return "image/webp";
  return undefined;
}

/** The bytes as text when they are valid UTF-8 with no NUL byte; undefined for binary data. */
export function textOf(b: Uint8Array): string | undefined {
  if (b.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(b);
  } catch {
    return undefined;
  }
}

/** Types read as text when the agent takes embedded resources: text/*, and the structured text formats people paste. */
const TEXT_TYPES = new Set([
  "application/json",
  "application/x-ndjson",
  "application/xml",
  "application/yaml",
  "application/x-yaml",
  "application/toml",
  "application/x-sh",
  "application/javascript",
  "application/typescript",
  "application/sql",
  "application/x-diff",
  "application/x-patch",
]);

/** File extensions of text files, for attachments whose type was not given. */
const TEXT_EXTS = new Set([
  "txt",
  "log",
  "md",
  "diff",
  "patch",
  "json",
  "yaml",
  "yml",
  "toml",
  "csv",
  "xml",
  "sh",
  "py",
  "ts",
  "js",
  "rs",
  "go",
  "java",
  "c",
  "h",
  "cpp",
  "sql",
]);
const IMAGE_EXTS: Readonly<Record<string, ImageType>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};

/** What the bridge makes of an attachment before downloading it: an image, a text file, or something it only lists. */
export function attachmentClass(mime: string | undefined, url: string): "image" | "text" | "other" {
  if (mime) {
    if (mime.startsWith("image/")) return "image";
    if (mime.startsWith("text/") || TEXT_TYPES.has(mime)) return "text";
    return "other";
  }
  const ext = /\.([A-Za-z0-9]{1,8})(?:[?#]|$)/.exec(url)?.[1]?.toLowerCase();
  if (ext && IMAGE_EXTS[ext]) return "image";
  if (ext && TEXT_EXTS.has(ext)) return "text";
  return "other";
}
