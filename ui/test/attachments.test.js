// Attaching text files to a prompt: what is read, what is refused, the chips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import { Attachments, MAX_ATTACHMENT_BYTES, MAX_IMAGES_TOTAL, readAttachment, toBase64 } from '../js/attachments.js';

test('text files are read; images, binaries and big files are refused', async () => {
  assert.deepEqual(await readAttachment(new File(['a,b\n1,2\n'], 'q3.csv', { type: 'text/csv' })), {
    name: 'q3.csv',
    text: 'a,b\n1,2\n',
  });
  await assert.rejects(readAttachment(new File([new Uint8Array([0xff, 0xd8])], 'p.jpg', { type: 'image/jpeg' })), /the model does not take images \(setting `images`\)/);
  await assert.rejects(readAttachment(new File([new Uint8Array([0xff, 0xfe, 0x00])], 'blob.bin')), /not UTF-8 text/);
  await assert.rejects(readAttachment(new File(['a\0b'], 'nul.txt')), /is not text/);
  await assert.rejects(readAttachment(new File(['x'.repeat(MAX_ATTACHMENT_BYTES + 1)], 'big.log')), /over the 262144-byte limit/);
});

test('chips list the files, remove one, and the prompt takes them', async () => {
  const dom = new JSDOM('<!doctype html><body><input type="file" id="i"><button id="b"></button><ul id="l"></ul></body>');
  const doc = dom.window.document;
  const statuses = [];
  const a = new Attachments({ input: doc.getElementById('i'), button: doc.getElementById('b'), list: doc.getElementById('l'), onStatus: (s) => statuses.push(s) });
  await a.add([new File(['one'], 'a.txt'), new File(['two'], 'b.md'), new File([new Uint8Array([0xff])], 'c.bin')]);
  assert.deepEqual([...doc.querySelectorAll('.chip span')].map((s) => s.textContent), ['📄 a.txt', '📄 b.md']);
  assert.match(statuses[0], /c\.bin is not UTF-8 text/);
  doc.querySelector('.chip button').click();
  assert.deepEqual(a.files.map((f) => f.name), ['b.md']);
  assert.deepEqual(a.take(), [{ name: 'b.md', text: 'two' }]);
  assert.equal(doc.querySelectorAll('.chip').length, 0);
  a.restore([{ name: 'b.md', text: 'two' }]);
  assert.equal(doc.querySelectorAll('.chip').length, 1);
});

test('images attach as base64 only when the model takes them', async () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.deepEqual(await readAttachment(new File([png], 'dot.png', { type: 'image/png' }), { images: true }), {
    name: 'dot.png',
    image: 'iVBORw0KGgo=',
    size: 8,
  });
  await assert.rejects(readAttachment(new File([png], 'dot.png', { type: 'image/png' })), /does not take images/);
  await assert.rejects(readAttachment(new File(['<svg/>'], 'x.svg', { type: 'image/svg+xml' }), { images: true }), /only PNG, JPEG, GIF and WebP/);
  await assert.rejects(
    readAttachment(new File([new Uint8Array(MAX_IMAGES_TOTAL + 1)], 'big.png', { type: 'image/png' }), { images: true }),
    /over the 4194304-byte limit/,
  );
  // Large arrays encode in pieces, the same as one call would.
  const big = new Uint8Array(100000).map((_, i) => i % 251);
  assert.equal(toBase64(big), Buffer.from(big).toString('base64'));
});

test('image chips, the total of the images, and the wire form of each kind', async () => {
  const dom = new JSDOM('<!doctype html><body><input type="file" id="i"><button id="b"></button><ul id="l"></ul></body>');
  const doc = dom.window.document;
  const statuses = [];
  const a = new Attachments({ input: doc.getElementById('i'), button: doc.getElementById('b'), list: doc.getElementById('l'), onStatus: (s) => statuses.push(s) });
  a.images = true;
  const jpeg = (n) => new File([new Uint8Array(n).fill(0xff)], `p${n}.jpg`, { type: 'image/jpeg' });
  await a.add([new File(['one'], 'a.txt'), jpeg(3 * 1024 * 1024), jpeg(2 * 1024 * 1024)]);
  assert.deepEqual([...doc.querySelectorAll('.chip span')].map((s) => s.textContent), ['📄 a.txt', `🖼 p${3 * 1024 * 1024}.jpg`]);
  assert.match(statuses[0], /the images would hold 5242880 bytes together, over the 4194304-byte limit/);
  const wire = Attachments.wire(a.take());
  assert.deepEqual(wire.map((f) => Object.keys(f)), [['name', 'text'], ['name', 'image']]);
});
