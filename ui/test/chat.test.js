// The chat view's pure helpers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { resolutionText } from '../js/chat.js';

test('a closed approval card says how it was closed', () => {
  assert.equal(resolutionText('approve', 'answered'), 'Approved');
  assert.equal(resolutionText('deny', 'answered'), 'Denied');
  assert.equal(resolutionText('deny', 'expired'), 'Expired: no answer in time');
  assert.equal(resolutionText('deny', 'cancelled'), 'Cancelled with the run');
  assert.equal(resolutionText('deny', undefined), 'Denied');
});
