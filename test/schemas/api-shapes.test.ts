import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { clone, expectInvalid, expectValid, without } from './helpers.js';

describe('success-envelope schema', () => {
  const S = 'success-envelope';
  const meta = { timestamp: '2024-05-01T10:00:00Z', requestId: 'req-1', version: '1.0' };

  it.each([[{ id: 'react-app' }], [[{ id: 'a' }, { id: 'b' }]], [null], ['ok']])('accepts %j as data', (data) => {
    expectValid(S, { data, meta });
  });

  it.each(['data', 'meta'])('rejects an envelope without %s', (field) => {
    const envelope: Record<string, unknown> = { data: {}, meta };
    delete envelope[field];
    expectInvalid(S, envelope, { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it.each(['timestamp', 'requestId', 'version'] as const)('rejects meta without %s', (field) => {
    expectInvalid(S, { data: {}, meta: without(meta, field) }, {
      keyword: 'required',
      instancePath: '/meta',
      params: { missingProperty: field },
    });
  });

  it('rejects a meta timestamp that is not a date-time', () => {
    expectInvalid(S, { data: {}, meta: { ...meta, timestamp: '1714557600' } }, { keyword: 'format', instancePath: '/meta/timestamp' });
  });

  it.each(['requestId', 'version'])('rejects an empty meta %s', (field) => {
    expectInvalid(S, { data: {}, meta: { ...meta, [field]: '' } }, { keyword: 'minLength', instancePath: `/meta/${field}` });
  });

  it('rejects unknown fields in the envelope and in meta', () => {
    expectInvalid(S, { data: {}, meta, links: {} }, { keyword: 'additionalProperties', instancePath: '' });
    expectInvalid(S, { data: {}, meta: { ...meta, took: 3 } }, { keyword: 'additionalProperties', instancePath: '/meta' });
  });
});

describe('error-envelope schema', () => {
  const S = 'error-envelope';
  const validationError = {
    error: {
      code: 'VALIDATION_ERROR',
      message: 'Input failed validation',
      details: [
        { field: 'email', message: 'Email is required', code: 'REQUIRED' },
        { field: 'password', message: 'Password is too short', code: 'MIN_LENGTH' },
      ],
      requestId: 'req-1',
      timestamp: '2024-05-01T10:00:00Z',
    },
  };
  const rateLimited = {
    error: {
      code: 'RATE_LIMIT_EXCEEDED',
      message: 'Too many requests',
      requestId: 'req-2',
      timestamp: '2024-05-01T10:00:00Z',
      retryAfter: 60,
    },
  };
  const withError = (change: Record<string, unknown>, base: { error: object } = validationError) => ({ error: { ...base.error, ...change } });

  it('accepts a validation error with details', () => {
    expectValid(S, validationError);
  });

  it('accepts a rate-limit error with retryAfter', () => {
    expectValid(S, rateLimited);
  });

  it.each(['EMAIL_EXISTS', 'UNAUTHORIZED', 'NOT_FOUND', 'E2E'])('accepts code %s without details', (code) => {
    expectValid(S, { error: without({ ...validationError.error, code }, 'details') });
  });

  it('rejects an envelope without error', () => {
    expectInvalid(S, {}, { keyword: 'required', instancePath: '', params: { missingProperty: 'error' } });
  });

  it.each(['code', 'message', 'requestId', 'timestamp'] as const)('rejects an error without %s', (field) => {
    expectInvalid(S, { error: without(validationError.error, field) }, {
      keyword: 'required',
      instancePath: '/error',
      params: { missingProperty: field },
    });
  });

  it.each(['validation_error', 'Validation', 'VALIDATION-ERROR', '_X', ''])('rejects code "%s"', (code) => {
    expectInvalid(S, withError({ code }), { keyword: 'pattern', instancePath: '/error/code' });
  });

  it('rejects an empty message and requestId', () => {
    expectInvalid(S, withError({ message: '' }), { keyword: 'minLength', instancePath: '/error/message' });
    expectInvalid(S, withError({ requestId: '' }), { keyword: 'minLength', instancePath: '/error/requestId' });
  });

  it('rejects a timestamp that is not a date-time', () => {
    expectInvalid(S, withError({ timestamp: 'now' }), { keyword: 'format', instancePath: '/error/timestamp' });
  });

  it('rejects a VALIDATION_ERROR without details', () => {
    expectInvalid(S, { error: without(validationError.error, 'details') }, {
      keyword: 'required',
      instancePath: '/error',
      params: { missingProperty: 'details' },
    });
  });

  it('rejects a VALIDATION_ERROR with an empty details list', () => {
    expectInvalid(S, withError({ details: [] }), { keyword: 'minItems', instancePath: '/error/details' });
  });

  it.each(['field', 'message', 'code'])('rejects a detail without %s', (field) => {
    const detail: Record<string, unknown> = { field: 'email', message: 'Email is required', code: 'REQUIRED' };
    delete detail[field];
    expectInvalid(S, withError({ details: [detail] }), {
      keyword: 'required',
      instancePath: '/error/details/0',
      params: { missingProperty: field },
    });
  });

  it('rejects a detail with a lower-case code, empty field or message, or an unknown field', () => {
    const detail = { field: 'email', message: 'Email is required', code: 'REQUIRED' };
    expectInvalid(S, withError({ details: [{ ...detail, code: 'required' }] }), {
      keyword: 'pattern',
      instancePath: '/error/details/0/code',
    });
    expectInvalid(S, withError({ details: [{ ...detail, field: '' }] }), { keyword: 'minLength', instancePath: '/error/details/0/field' });
    expectInvalid(S, withError({ details: [{ ...detail, message: '' }] }), {
      keyword: 'minLength',
      instancePath: '/error/details/0/message',
    });
    expectInvalid(S, withError({ details: [{ ...detail, value: 'x' }] }), {
      keyword: 'additionalProperties',
      instancePath: '/error/details/0',
    });
  });

  it('rejects a RATE_LIMIT_EXCEEDED error without retryAfter', () => {
    const data = clone(rateLimited) as { error: Record<string, unknown> };
    delete data.error.retryAfter;
    expectInvalid(S, data, { keyword: 'required', instancePath: '/error', params: { missingProperty: 'retryAfter' } });
    const error = schemaErrors(S, data).find((e) => e.keyword === 'required');
    expect(error?.parentSchema?.['x-messages']).toEqual({ required: 'a RATE_LIMIT_EXCEEDED error carries retryAfter (seconds)' });
  });

  it('rejects a negative or non-numeric retryAfter', () => {
    expectInvalid(S, withError({ retryAfter: -1 }, rateLimited), { keyword: 'minimum', instancePath: '/error/retryAfter' });
    expectInvalid(S, withError({ retryAfter: '60' }, rateLimited), { keyword: 'type', instancePath: '/error/retryAfter' });
  });

  it('rejects unknown fields in the envelope and in the error', () => {
    expectInvalid(S, { ...validationError, status: 422 }, { keyword: 'additionalProperties', instancePath: '' });
    expectInvalid(S, withError({ status: 422 }), { keyword: 'additionalProperties', instancePath: '/error' });
  });
});

describe('offset-pagination schema', () => {
  const S = 'offset-pagination';
  const pagination = { page: 2, limit: 20, total: 45, totalPages: 3, hasNext: true, hasPrevious: true };
  const page = (change: Record<string, unknown>) => ({ data: [{ id: 'a' }], pagination: { ...pagination, ...change } });

  it('accepts a middle page', () => {
    expectValid(S, page({}));
  });

  it('accepts the first page of an empty list', () => {
    expectValid(S, { data: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0, hasNext: false, hasPrevious: false } });
  });

  it.each(['data', 'pagination'])('rejects a response without %s', (field) => {
    const response: Record<string, unknown> = page({});
    delete response[field];
    expectInvalid(S, response, { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects data that is not an array', () => {
    expectInvalid(S, { data: {}, pagination }, { keyword: 'type', instancePath: '/data' });
  });

  it.each(['page', 'limit', 'total', 'totalPages', 'hasNext', 'hasPrevious'] as const)('rejects pagination without %s', (field) => {
    expectInvalid(S, { data: [], pagination: without(pagination, field) }, {
      keyword: 'required',
      instancePath: '/pagination',
      params: { missingProperty: field },
    });
  });

  it('rejects page 0 and a fractional page', () => {
    expectInvalid(S, page({ page: 0, hasPrevious: true }), { keyword: 'minimum', instancePath: '/pagination/page' });
    expectInvalid(S, page({ page: 1.5 }), { keyword: 'type', instancePath: '/pagination/page' });
  });

  it.each([1, 20, 100])('accepts limit %d', (limit) => {
    expectValid(S, page({ limit }));
  });

  it('rejects a limit below 1 or above 100', () => {
    expectInvalid(S, page({ limit: 0 }), { keyword: 'minimum', instancePath: '/pagination/limit' });
    expectInvalid(S, page({ limit: 101 }), { keyword: 'maximum', instancePath: '/pagination/limit' });
  });

  it('rejects a negative total or totalPages', () => {
    expectInvalid(S, page({ total: -1 }), { keyword: 'minimum', instancePath: '/pagination/total' });
    expectInvalid(S, page({ totalPages: -1 }), { keyword: 'minimum', instancePath: '/pagination/totalPages' });
  });

  it('rejects hasNext that is not a boolean', () => {
    expectInvalid(S, page({ hasNext: 'true' }), { keyword: 'type', instancePath: '/pagination/hasNext' });
  });

  it('rejects hasPrevious true on page 1', () => {
    expectInvalid(S, page({ page: 1, hasPrevious: true }), { keyword: 'const', instancePath: '/pagination/hasPrevious' });
  });

  it('rejects hasPrevious false after page 1', () => {
    expectInvalid(S, page({ page: 3, hasPrevious: false }), { keyword: 'const', instancePath: '/pagination/hasPrevious' });
  });

  it('rejects unknown fields', () => {
    expectInvalid(S, { ...page({}), links: {} }, { keyword: 'additionalProperties', instancePath: '' });
    expectInvalid(S, page({ offset: 20 }), { keyword: 'additionalProperties', instancePath: '/pagination' });
  });
});

describe('cursor-pagination schema', () => {
  const S = 'cursor-pagination';
  const pagination = { limit: 20, hasNext: true, nextCursor: 'eyJpZCI6MjB9', prevCursor: null };
  const page = (change: Record<string, unknown>) => ({ data: [{ id: 'a' }], pagination: { ...pagination, ...change } });

  it('accepts a first page with a next cursor', () => {
    expectValid(S, page({}));
  });

  it('accepts a last page with no next cursor', () => {
    expectValid(S, page({ hasNext: false, nextCursor: null, prevCursor: 'eyJpZCI6MH0' }));
  });

  it.each(['data', 'pagination'])('rejects a response without %s', (field) => {
    const response: Record<string, unknown> = page({});
    delete response[field];
    expectInvalid(S, response, { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects data that is not an array', () => {
    expectInvalid(S, { data: 'x', pagination }, { keyword: 'type', instancePath: '/data' });
  });

  it.each(['limit', 'hasNext', 'nextCursor', 'prevCursor'] as const)('rejects pagination without %s', (field) => {
    expectInvalid(S, { data: [], pagination: without(pagination, field) }, {
      keyword: 'required',
      instancePath: '/pagination',
      params: { missingProperty: field },
    });
  });

  it('rejects a limit below 1 or above 100', () => {
    expectInvalid(S, page({ limit: 0 }), { keyword: 'minimum', instancePath: '/pagination/limit' });
    expectInvalid(S, page({ limit: 101 }), { keyword: 'maximum', instancePath: '/pagination/limit' });
  });

  it('rejects cursors that are neither a string nor null', () => {
    expectInvalid(S, page({ hasNext: false, nextCursor: 20 }), { keyword: 'type', instancePath: '/pagination/nextCursor' });
    expectInvalid(S, page({ prevCursor: 0 }), { keyword: 'type', instancePath: '/pagination/prevCursor' });
  });

  it('rejects hasNext true without a next cursor', () => {
    expectInvalid(S, page({ nextCursor: null }), { keyword: 'type', instancePath: '/pagination/nextCursor', params: { type: 'string' } });
  });

  it('rejects hasNext that is not a boolean, and unknown fields', () => {
    expectInvalid(S, page({ hasNext: 1 }), { keyword: 'type', instancePath: '/pagination/hasNext' });
    expectInvalid(S, page({ total: 3 }), { keyword: 'additionalProperties', instancePath: '/pagination' });
    expectInvalid(S, { ...page({}), total: 3 }, { keyword: 'additionalProperties', instancePath: '' });
  });
});

describe('webhook-registration schema', () => {
  const S = 'webhook-registration';
  const registration = {
    url: 'https://hooks.example.com/registry',
    events: ['template.published', 'template.deprecated'],
    secret: 'whsec_123',
    active: true,
  };

  it('accepts a registration', () => {
    expectValid(S, registration);
  });

  it.each(['url', 'events', 'secret', 'active'] as const)('rejects a registration without %s', (field) => {
    expectInvalid(S, without(registration, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects a url that is not an absolute URI', () => {
    expectInvalid(S, { ...registration, url: '/hooks/registry' }, { keyword: 'format', instancePath: '/url', params: { format: 'uri' } });
  });

  it('rejects an empty event list', () => {
    expectInvalid(S, { ...registration, events: [] }, { keyword: 'minItems', instancePath: '/events' });
  });

  it('rejects the same event twice', () => {
    expectInvalid(S, { ...registration, events: ['template.published', 'template.published'] }, {
      keyword: 'uniqueItems',
      instancePath: '/events',
    });
  });

  it.each(['published', 'template.', '.published', 'template published', 'template.*', ''])('rejects event name "%s"', (event) => {
    expectInvalid(S, { ...registration, events: [event] }, { keyword: 'pattern', instancePath: '/events/0' });
  });

  it('accepts dotted names with several parts', () => {
    expectValid(S, { ...registration, events: ['template.version.published', 'category.created'] });
  });

  it('rejects an empty secret, and active that is not a boolean', () => {
    expectInvalid(S, { ...registration, secret: '' }, { keyword: 'minLength', instancePath: '/secret' });
    expectInvalid(S, { ...registration, active: 'yes' }, { keyword: 'type', instancePath: '/active' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...registration, headers: {} }, { keyword: 'additionalProperties', instancePath: '' });
  });
});
