import { randomBytes } from 'node:crypto';

/** One part of a hand-made multipart body; `disposition` replaces the Content-Disposition the name and file name make. */
export interface MultipartPart {
  name: string;
  filename?: string;
  type?: string;
  disposition?: string;
  body: Buffer | string;
}

/** A multipart/form-data body made by hand (as a client other than ours might send it), and its Content-Type. */
export function multipartBody(parts: readonly MultipartPart[]): { payload: Buffer; type: string } {
  const boundary = `----tr${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = part.disposition ?? `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`), Buffer.from(part.body), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}
