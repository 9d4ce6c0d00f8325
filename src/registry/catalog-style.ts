/**
 * The catalog page's style sheet (inline, allowed by its hash in the page's CSP). Light and dark
 * follow the reader's system setting; focus is always visible.
 */
export const CATALOG_STYLE = `
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--card:#f6f8fa;--line:#d1d9e0;--accent:#0969da;--warn:#9a6700;--bad:#cf222e;--good:#1a7f37}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--card:#151b23;--line:#3d444d;--accent:#4493f8;--warn:#d29922;--bad:#f85149;--good:#3fb950}}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:75rem;margin:0 auto;padding:.75rem 1rem}
h1{margin:.25rem 0;font-size:1.6rem}
h2{font-size:1.3rem;margin:1rem 0 .5rem}
h3{font-size:1.05rem;margin:1.25rem 0 .5rem}
a{color:var(--accent)}
:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
.muted{color:var(--muted);font-size:.9em}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
button,input,select{font:inherit;color:var(--fg)}
button{cursor:pointer}
.controls{display:flex;flex-wrap:wrap;gap:.5rem .75rem;align-items:end;margin:.5rem 0}
.controls .field{display:flex;flex-direction:column;gap:.15rem}
.controls label{font-size:.8em;color:var(--muted)}
.controls .search{flex:1 1 18rem}
.controls input,.controls select{font-size:1rem;padding:.4rem .6rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);min-height:2.3rem}
.controls select{max-width:13rem}
.bar{display:flex;flex-wrap:wrap;align-items:center;gap:.4rem .75rem;margin:.25rem 0 .75rem;min-height:1.8rem}
.bar p{margin:0}
.bar .sort{margin-left:auto;font-size:.9em;color:var(--muted)}
.bar select{font-size:.95rem;padding:.25rem .5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg)}
.detail-grid{display:grid;grid-template-columns:minmax(0,1fr);gap:0 2.5rem}
@media (min-width:60rem){.detail-grid{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}}
.chips{display:flex;flex-wrap:wrap;gap:.4rem;margin:0;padding:0;list-style:none}
.chip,.link-button{padding:.1rem .6rem;border:1px solid var(--line);border-radius:999px;background:var(--card);font-size:.85em}
.link-button{border-color:transparent;background:none;color:var(--accent);text-decoration:underline}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(21rem,1fr));gap:.9rem;padding:0;margin:0;list-style:none}
.card{display:flex;flex-direction:column;gap:.35rem;padding:.9rem 1rem;border:1px solid var(--line);border-radius:8px;background:var(--card);content-visibility:auto;contain-intrinsic-size:auto 10rem}
.card h3{margin:0;font-size:1.05rem;overflow-wrap:anywhere}
.card h3 a{text-decoration:none}
.card h3 a:hover{text-decoration:underline}
.card p{margin:0;overflow-wrap:anywhere}
.card .meta{margin-top:auto}
.badge{display:inline-block;padding:0 .45rem;border:1px solid var(--line);border-radius:999px;font-size:.75rem;font-weight:normal;margin-left:.35rem;vertical-align:middle;color:var(--muted)}
.stability-beta{border-color:var(--warn);color:var(--warn)}
.stability-experimental{border-color:var(--bad);color:var(--bad)}
.stability-deprecated{text-decoration:line-through}
.breaking{border-color:var(--bad);color:var(--bad)}
.tags{display:flex;flex-wrap:wrap;gap:.3rem;padding:0;margin:0;list-style:none}
.tag{font-size:.8em;padding:0 .45rem;border-radius:4px;background:var(--bg);border:1px solid var(--line)}
.tag.feature{border-style:dashed}
button.tag:hover{border-color:var(--accent)}
.more{display:block;margin:1rem auto;padding:.45rem 1.2rem;border:1px solid var(--line);border-radius:6px;background:var(--card)}
.panel{margin-top:2rem;padding:.75rem 1rem;border:1px solid var(--line);border-radius:8px;background:var(--card)}
.panel h2{margin-top:0;font-size:1.05rem}
.command{display:flex;gap:.5rem;align-items:stretch;margin:.4rem 0}
.command pre{flex:1;margin:0;padding:.5rem .75rem;overflow-x:auto;border:1px solid var(--line);border-radius:6px;background:var(--bg);font:13px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.command button{padding:0 .8rem;border:1px solid var(--line);border-radius:6px;background:var(--bg)}
.detail h2{font-size:1.5rem;margin:.5rem 0;overflow-wrap:anywhere}
.detail h2:focus{outline:none}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:.5rem 0}
.facts dt{color:var(--muted)}
.facts dd{margin:0;overflow-wrap:anywhere}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
.error{color:var(--bad)}
`;
