// Large documents for the ingestion tests and the benchmark: plain text of any size and a PDF
// of many pages, both with one sentence to search for near their end. Deterministic (a seeded
// generator), so a failure reads the same every run.
import { deflateSync } from "node:zlib";

const WORDS = ("river orchard ledger harbor signal meadow copper lantern violet granite summit " +
  "compass willow beacon thicket falcon marble tundra prairie cobalt saffron juniper canyon " +
  "glacier quarry pebble mosaic velvet cinder emerald fjord heron larch osprey walnut zenith " +
  "amber basalt cedar dune ember fern grove hazel iris jasper kelp lichen maple nectar").split(" ");

function generator(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
}

/** A sentence of 8 to 19 words. */
function sentence(next) {
  const n = 8 + (next() % 12);
  const words = [];
  for (let i = 0; i < n; i++) words.push(WORDS[next() % WORDS.length]);
  words[0] = words[0][0].toUpperCase() + words[0].slice(1);
  return words.join(" ") + ".";
}

/** About `bytes` of text in paragraphs under headings, `marker` in the last paragraph. */
export function largeText(bytes, marker, seed = 7) {
  const next = generator(seed);
  const parts = [];
  let size = 0;
  let section = 0;
  while (size < bytes - marker.length - 200) {
    let p;
    if (next() % 12 === 0) p = `# Section ${++section}`;
    else {
      const n = 3 + (next() % 5);
      const s = [];
      for (let i = 0; i < n; i++) s.push(sentence(next));
      p = s.join(" ");
    }
    parts.push(p);
    size += p.length + 2;
  }
  parts.push(`${marker}`);
  return parts.join("\n\n");
}

function pdfString(s) {
  return "(" + s.replace(/[\\()]/g, (c) => "\\" + c) + ")";
}

/**
 * A PDF of `pages` pages of text (Helvetica, Flate-compressed), `marker` on the last page. With
 * `totalBytes`, each page also draws a greyscale picture of noise (which does not compress), so
 * that the file is about that large, as a long scanned-and-typeset report would be.
 */
export function largePdf(pages, marker, seed = 11, { totalBytes = 0 } = {}) {
  const next = generator(seed);
  const objects = [];
  const add = (body) => {
    objects.push(body);
    return objects.length;
  };
  const catalog = add(null);
  const pagesObj = add(null);
  const font = add(Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"));
  const kids = [];
  // Picture bytes per page: what the text leaves of `totalBytes` (about 1,750 bytes a page).
  const pictureBytes = totalBytes > 0 ? Math.max(0, Math.floor((totalBytes - pages * 2000) / pages / 100) * 100) : 0;
  for (let p = 0; p < pages; p++) {
    const lines = [];
    for (let l = 0; l < 56; l++) {
      const words = [];
      for (let w = 0; w < 14; w++) words.push(WORDS[next() % WORDS.length]);
      lines.push(words.join(" ") + (l % 7 === 6 ? "." : ""));
    }
    if (p === pages - 1) lines.push(marker);
    let text = `BT /F1 10 Tf 40 760 Td 13 TL ${lines.map((l) => `${pdfString(l)} Tj T*`).join(" ")} ET`;
    let picture = null;
    if (pictureBytes > 0) {
      const noise = Buffer.alloc(pictureBytes);
      for (let i = 0; i < pictureBytes; i += 4) noise.writeUInt32LE(next(), i);
      picture = add(Buffer.concat([
        Buffer.from(`<< /Type /XObject /Subtype /Image /Width 100 /Height ${pictureBytes / 100} /ColorSpace /DeviceGray /BitsPerComponent 8 /Length ${pictureBytes} >>\nstream\n`),
        noise,
        Buffer.from("\nendstream"),
      ]));
      text += " q 200 0 0 120 40 40 cm /Im1 Do Q";
    }
    const data = deflateSync(Buffer.from(text, "latin1"));
    const content = add(Buffer.concat([
      Buffer.from(`<< /Length ${data.length} /Filter /FlateDecode >>\nstream\n`),
      data,
      Buffer.from("\nendstream"),
    ]));
    kids.push(add(Buffer.from(
      `<< /Type /Page /Parent ${pagesObj} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >>${picture ? ` /XObject << /Im1 ${picture} 0 R >>` : ""} >> /Contents ${content} 0 R >>`,
    )));
  }
  objects[catalog - 1] = Buffer.from(`<< /Type /Catalog /Pages ${pagesObj} 0 R >>`);
  objects[pagesObj - 1] = Buffer.from(`<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`);
  const chunks = [Buffer.from("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "latin1")];
  let offset = chunks[0].length;
  const offsets = [];
  objects.forEach((body, i) => {
    offsets.push(offset);
    const obj = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from("\nendobj\n")]);
    chunks.push(obj);
    offset += obj.length;
  });
  const xref = [`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`,
    ...offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`),
    `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R >>\nstartxref\n${offset}\n%%EOF\n`].join("");
  chunks.push(Buffer.from(xref));
  return Buffer.concat(chunks);
}
