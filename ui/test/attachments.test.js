// Attaching text files to a prompt: what is read, what is refused, the chips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import { Attachments, MAX_ATTACHMENT_BYTES, readAttachment } from '../js/attachments.js';

test('text files are read; images, binaries and big files are refused', async () => {
  assert.deepEqual(await readAttachment(new File(['a,b\n1,2\n'], 'q3.csv', { type: 'text/csv' })), {
    name: 'q3.csv',
    text: 'a,b\n1,2\n',
  });
  await assert.rejects(readAttachment(new File([new Uint8Array([0xff, 0xd8])], 'p.jpg', { type: 'image/jpeg' })), /images are not sent/);
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
