// .gitignore rules, matched as git matches them: loaded on first use through ./ignore.load.ts.
export { default as ignore } from 'ignore';
