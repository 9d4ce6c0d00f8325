import { describe, expect, it } from 'vitest';

import { testTemplate } from '../../src/template/index.js';
import { validManifest, writeTemplate } from '../helpers/fixtures.js';

const problemsOf = (report: Awaited<ReturnType<typeof testTemplate>>): string[] => report.sets.flatMap((set) => set.problems);

describe('test: braces in the generated files', () => {
  it('passes the braces that {% raw %}, the answers and Liquid itself produce on purpose', async () => {
    const dir = await writeTemplate({
      'template/.github/workflows/ci.yml': 'name: {{ projectName }}\njobs:\n  build:\n    steps:\n      - run: echo {% raw %}${{ github.sha }}{% endraw %}\n',
      'template/justfile': 'build:\n\techo {% raw %}{{ version }}{% endraw %}\n',
      'template/.circleci/config.yml': 'key: v1-{% raw %}{{ .Branch }}{% endraw %}\n',
      'template/src/App.jsx': 'export const App = () => <div style={% raw %}{{ color: "red" }}{% endraw %}>{{ projectName }}</div>;\n',
      'template/emails/welcome.html': '{% raw %}<p>Hello {{ user.name }}</p>{% if admin %}{% endif %}{% endraw %}\n',
      'template/chart/templates/deployment.yaml': 'name: {% raw %}{{ .Release.Name }}-{{ .Chart.Name }}{% endraw %}\n',
      'template/braces.txt': "{{ '{{' }} and {{ '{%' }}\n",
    });
    const report = await testTemplate(dir);
    expect(problemsOf(report)).toEqual([]);
    expect(report.passed).toBe(true);
  });

  it('passes an answer that holds braces (an enum value: a default with braces is a computed default)', async () => {
    const dir = await writeTemplate({ 'template/about.txt': '{{ description }}\n' });
    const report = await testTemplate(dir);
    expect(report.passed).toBe(true);
    const withBraces = await writeTemplate({
      'template.vars.json': { variables: { projectName: { type: 'string', default: 'my-app' }, description: { type: 'string', enum: ['plain', 'Uses {{ mustache }} and {% tags %}'], default: 'plain' }, features: { type: 'array', enum: ['api', 'testing'], default: ['api'] } }, computed: { packageName: 'projectName | package_name' } },
      'template/about.txt': '{{ description }}\n',
    });
    expect(problemsOf(await testTemplate(withBraces))).toEqual([]);
  });

  it('reports a misspelt tag as the file and line whose Liquid does not render', async () => {
    const dir = await writeTemplate({ 'template/notes.txt': 'one\ntwo\n{% iff features contains "api" %}x{% endif %}\n' });
    const report = await testTemplate(dir);
    expect(report.passed).toBe(false);
    expect(problemsOf(report)[0]).toMatch(/^notes\.txt:3: its content cannot be rendered: .*iff/);
  });
});

describe('test: JSON files', () => {
  it('accepts comments and trailing commas in the JSONC files TypeScript, VS Code and dev containers read', async () => {
    const jsonc = '{\n  // a comment\n  "compilerOptions": { "strict": true, /* more */ },\n}\n';
    const dir = await writeTemplate({
      'template/tsconfig.json': jsonc,
      'template/tsconfig.build.json': jsonc,
      'template/packages/web/jsconfig.json': jsonc,
      'template/.vscode/settings.json': jsonc,
      'template/.vscode/extensions.json': jsonc,
      'template/.devcontainer/devcontainer.json': jsonc,
      'template/.devcontainer/features.json': jsonc,
      'template/services/api/devcontainer.json': jsonc,
      'template/config/app.jsonc': jsonc,
    });
    const report = await testTemplate(dir);
    expect(problemsOf(report)).toEqual([]);
    expect(report.passed).toBe(true);
  });

  it('keeps every other .json file strict and names the line at fault', async () => {
    const dir = await writeTemplate({
      'template/package.json': '{\n  "name": "{{ projectName }}",\n  // no comments in package.json\n  "version": "1.0.0"\n}\n',
      'template/data.json': '{\n  "a": 1,\n}\n',
    });
    const problems = problemsOf(await testTemplate(dir));
    expect(problems).toContain('package.json:3: not valid JSON (InvalidCommentToken)');
    expect(problems).toContainEqual(expect.stringMatching(/^data\.json:3: not valid JSON/));
  });

  it('reads as JSONC the .json files named by the manifest jsonc globs (paths in the project), and only those', async () => {
    // As copier-uv, which keeps VS Code's and Zed's settings in config/ and copies them into place later.
    const launch = '{\n  "configurations": [\n    { "name": "docs", "args": ["serve",] },\n  ]\n}\n';
    const zed = '// Project-local debug tasks\n[\n  { "label": "{{ projectName }}" }\n]\n';
    const files = { 'template/config/vscode/launch.json': launch, 'template/config/zed/debug.json.liquid': zed, 'template/data/launch.json': launch };
    const strict = problemsOf(await testTemplate(await writeTemplate(files)));
    expect(strict).toContain('config/zed/debug.json:1: not valid JSON (InvalidCommentToken)');
    expect(strict).toContainEqual(expect.stringMatching(/^config\/vscode\/launch\.json:3: not valid JSON/));

    const manifest = { ...validManifest, jsonc: ['config/{vscode,zed}/*.json'] };
    const listed = problemsOf(await testTemplate(await writeTemplate({ ...files, 'template.json': manifest })));
    expect(listed.filter((problem) => problem.startsWith('config/'))).toEqual([]);
    expect(listed).toContainEqual(expect.stringMatching(/^data\/launch\.json:3: not valid JSON/));
  });

  it('reports a JSONC file that does not parse at its line', async () => {
    const dir = await writeTemplate({ 'template/tsconfig.json': '{\n  "compilerOptions": {\n    "strict": true\n  \n}\n' });
    const problems = problemsOf(await testTemplate(dir));
    expect(problems).toContainEqual(expect.stringMatching(/^tsconfig\.json:\d+: not valid JSONC \(CloseBraceExpected\)$/));
  });
});
