/**
 * Accounts and what a login gives: publisher and admin accounts made by an admin (e-mail, scrypt
 * password hash), access tokens (JWT, HS256, signed with the storage's key so that every instance on
 * one storage accepts them), refresh tokens (rotated on every use) and browser sessions (a cookie).
 * The routes (routes/accounts.ts), the auth hook and `template-registry user create` all go through
 * here.
 */
import { randomUUID } from 'node:crypto';

import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';

import type { ErrorDetail } from '../core/validation.js';
import type { AccountStore, TokenRecord, TokenRole, UserCreation, UserRecord } from '../store/types.js';
import { scryptHasher, type PasswordHasher } from './passwords.js';

/** Access tokens live 15 minutes: a stolen one is short-lived, and refresh tokens renew them. */
export const ACCESS_TOKEN_SECONDS = 15 * 60;
export const REFRESH_TOKEN_SECONDS = 30 * 24 * 60 * 60;
/** Browser sessions: 24 hours, as the spec's session pattern says. */
export const SESSION_SECONDS = 24 * 60 * 60;
export const SESSION_COOKIE = 'tr_session';

export const MIN_PASSWORD_LENGTH = 12;
/** Bounds the work of a hash on what a stranger sends. */
export const MAX_PASSWORD_LENGTH = 1024;
const MAX_EMAIL_LENGTH = 254;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const ISSUER = 'template-registry';
const AUDIENCE = 'template-registry';

export interface NewAccount {
  email: string;
  password: string;
  role?: TokenRole;
  /** Who the account publishes for; default: the e-mail. */
  owner?: string;
  name?: string;
  now?: Date;
}

/** An account that cannot be made as asked: every problem with its field. */
export class AccountInputError extends Error {
  override readonly name = 'AccountInputError';

  constructor(readonly details: ErrorDetail[]) {
    super(`the account is invalid: ${details.map((detail) => `${detail.field} ${detail.message}`).join('; ')}`);
  }
}

/**
 * What is wrong with an account's fields (beyond their types). Each field given as a string is
 * checked, whatever is wrong with the others, so that a route can answer every broken field at once;
 * a missing or non-string field is left to the route's schema (`REQUIRED`, `TYPE`).
 */
export function accountProblems(account: { email?: unknown; password?: unknown; role?: unknown }): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const email = typeof account.email === 'string' ? account.email.trim() : undefined;
  if (email !== undefined && (email.length > MAX_EMAIL_LENGTH || !EMAIL_PATTERN.test(email))) {
    details.push({ field: 'email', code: 'FORMAT', message: `must be an e-mail address like name@example.com (at most ${MAX_EMAIL_LENGTH} characters)` });
  }
  const length = typeof account.password === 'string' ? account.password.length : undefined;
  if (length !== undefined && length < MIN_PASSWORD_LENGTH) {
    details.push({ field: 'password', code: 'MIN_LENGTH', message: `must be at least ${MIN_PASSWORD_LENGTH} characters long (got ${length})` });
  } else if (length !== undefined && length > MAX_PASSWORD_LENGTH) {
    details.push({ field: 'password', code: 'MAX_LENGTH', message: `must be at most ${MAX_PASSWORD_LENGTH} characters long` });
  }
  if (account.role !== undefined && account.role !== 'publisher' && account.role !== 'admin') {
    details.push({ field: 'role', code: 'ENUM', message: `must be publisher or admin (got ${JSON.stringify(account.role)})` });
  }
  return details;
}

/** Makes an account (the password hashed with scrypt, or `hasher`: the server's hash queue); `email-exists` when the e-mail has one. */
export async function createAccount(accounts: AccountStore, account: NewAccount, hasher: PasswordHasher = scryptHasher): Promise<UserCreation> {
  const details = accountProblems(account);
  if (details.length > 0) throw new AccountInputError(details);
  const email = account.email.trim().toLowerCase();
  return accounts.createUser({
    email,
    passwordHash: await hasher.hash(account.password),
    role: account.role ?? 'publisher',
    owner: account.owner ?? email,
    ...(account.name !== undefined ? { name: account.name } : {}),
    ...(account.now ? { now: account.now } : {}),
  });
}

/** The account of an e-mail and password; undefined when either is wrong (same work either way). */
export async function checkCredentials(accounts: AccountStore, email: string, password: string, hasher: PasswordHasher = scryptHasher): Promise<UserRecord | undefined> {
  if (password.length > MAX_PASSWORD_LENGTH) return undefined;
  const found = await accounts.findCredentials(email);
  const matches = await hasher.verify(password, found?.passwordHash);
  return matches ? found?.user : undefined;
}

/** The answer of a login or a refresh (the spec's login route `data`). */
export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  tokenType: 'Bearer';
}

/** Keys are read once per storage: they never change. */
const keys = new WeakMap<AccountStore, Promise<Uint8Array>>();
function keyOf(accounts: AccountStore): Promise<Uint8Array> {
  let key = keys.get(accounts);
  if (!key) {
    key = accounts.signingKey();
    keys.set(accounts, key);
  }
  return key;
}

/**
 * An access token of `user`'s login `family` (its refresh tokens' family, carried as the `sid`
 * claim): the auth hook refuses it as soon as that login ends, not only when it expires.
 */
export async function issueAccessToken(accounts: AccountStore, user: UserRecord, family: string, now: Date = new Date()): Promise<string> {
  const issuedAt = Math.floor(now.getTime() / 1000);
  return new SignJWT({ sid: family })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user.id)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + ACCESS_TOKEN_SECONDS)
    .setJti(randomUUID())
    .sign(await keyOf(accounts));
}

/** An access token and a new refresh token for `user`. */
export async function issueTokenPair(accounts: AccountStore, user: UserRecord, now: Date = new Date()): Promise<TokenPair> {
  const refresh = await accounts.createSession({ userId: user.id, kind: 'refresh', expiresAt: new Date(now.getTime() + REFRESH_TOKEN_SECONDS * 1000), now });
  return { accessToken: await issueAccessToken(accounts, user, refresh.family, now), refreshToken: refresh.secret, expiresIn: ACCESS_TOKEN_SECONDS, tokenType: 'Bearer' };
}

/** Exchanges a refresh token for a new pair (the old refresh token stops working); undefined when it is refused. */
export async function refreshTokenPair(accounts: AccountStore, refreshToken: string, now: Date = new Date()): Promise<TokenPair | undefined> {
  const rotation = await accounts.rotateSession(refreshToken, new Date(now.getTime() + REFRESH_TOKEN_SECONDS * 1000), now);
  if (!rotation.rotated) return undefined;
  return { accessToken: await issueAccessToken(accounts, rotation.user, rotation.family, now), refreshToken: rotation.secret, expiresIn: ACCESS_TOKEN_SECONDS, tokenType: 'Bearer' };
}

/** A JWT's shape (three base64url parts): what tells an access token from an API token (`trg_...`). */
export function looksLikeAccessToken(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);
}

/** What an account acts as: the record the auth hook leaves on the request, like a token's. */
export function accountCredential(user: UserRecord): TokenRecord {
  return { id: user.id, role: user.role, owner: user.owner, createdAt: user.createdAt };
}

/**
 * Why an access token is refused, or its account. Its login and account are read from the storage
 * on every use: a replayed refresh token or a removed account ends the token at once (`ended`).
 * A token without a login (`sid`) is refused: only tokens issued before logins were checked lack
 * one, and they would outlive a replay for up to 15 minutes.
 */
export async function verifyAccessToken(accounts: AccountStore, token: string, now: Date = new Date()): Promise<{ user: UserRecord } | { refused: 'expired' | 'invalid' | 'ended' }> {
  try {
    const { payload } = await jwtVerify(token, await keyOf(accounts), {
      algorithms: ['HS256'],
      issuer: ISSUER,
      audience: AUDIENCE,
      currentDate: now,
      requiredClaims: ['sub', 'exp', 'iat', 'sid'],
    });
    if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string') return { refused: 'invalid' };
    const user = await accounts.loginUser(payload.sid, payload.sub);
    return user ? { user } : { refused: 'ended' };
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return { refused: 'expired' };
    if (error instanceof joseErrors.JOSEError) return { refused: 'invalid' };
    throw error;
  }
}

/** The attributes of the session cookie (@fastify/cookie's `setCookie`): HTTP-only, SameSite=Strict, 24 hours, whole site, Secure over https. */
export function sessionCookieOptions(secure: boolean): { path: string; maxAge: number; httpOnly: true; sameSite: 'strict'; secure: boolean } {
  return { path: '/', maxAge: SESSION_SECONDS, httpOnly: true, sameSite: 'strict', secure };
}
