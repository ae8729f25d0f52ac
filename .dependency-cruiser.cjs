/**
 * Which folder may import which (`npm run deps`, part of `npm test`). Folders form layers and
 * imports run one way, downward: a lower folder never imports a higher one, and no files import
 * each other in a circle. docs/architecture.md draws the same layers.
 *
 * `allowed` lists, for each folder of src/, the folders below it that it may import. Every folder
 * may also import itself and the base modules at the top of src/ (config, log, errors).
 */
const allowed = {
  contract: [],
  api: ['contract'],
  events: ['contract', 'api'],
  pipeline: ['contract'],
  media: ['contract', 'api'],
  store: ['contract', 'events', 'media'],
  queue: ['contract', 'api', 'events'],
  run: ['contract', 'api', 'events', 'pipeline', 'media', 'store', 'queue'],
  crawls: ['contract', 'api'],
  notify: ['contract', 'api', 'events', 'store', 'queue'],
  report: ['contract', 'events', 'pipeline', 'store'],
  schedule: ['contract', 'pipeline', 'store', 'queue', 'run'],
  metrics: ['contract', 'events', 'store', 'queue'],
  dashboard: ['contract', 'queue', 'schedule'],
  sandbox: ['contract'],
};

const layerRules = Object.entries(allowed).map(([folder, below]) => ({
  name: `${folder}-imports-down`,
  comment: `src/${folder} may import only ${below.length ? below.map((f) => `src/${f}`).join(', ') : 'nothing of src/'} (and src/config, src/log, src/errors)`,
  severity: 'error',
  from: { path: `^src/${folder}/` },
  to: {
    path: '^(src/[^/]+/|jobs/)',
    pathNot: `^src/(${[folder, ...below].join('|')})/`,
  },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'files that import each other in a circle',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'base-imports-nothing',
      comment: 'src/config, src/log and src/errors are imported by every folder and import none',
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: '^(src/|jobs/)' },
    },
    ...layerRules,
    {
      name: 'jobs-not-cli',
      comment: 'jobs/ may import any folder of src/ but the CLI',
      severity: 'error',
      from: { path: '^jobs/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'src-not-jobs',
      comment: 'src/ never imports jobs/, except the CLI that starts workers',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^jobs/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    // Type-only imports count: a layer that needs a higher layer's types depends on it all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
