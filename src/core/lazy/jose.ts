// JSON Web Signatures and tokens (jose): loaded on first use through ./jose.load.ts.
export { CompactSign, compactVerify, createRemoteJWKSet, customFetch, decodeJwt, decodeProtectedHeader, errors, GeneralSign, generalVerify, importJWK, jwtVerify } from 'jose';
