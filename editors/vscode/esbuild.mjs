// Bundles src/extension.ts and its dependencies (vscode-languageclient) into dist/extension.js,
// so the .vsix needs no node_modules. `vscode` is provided by the editor at run time.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');

await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  // VS Code 1.91 (the oldest this extension supports) runs extensions on Node 20.
  target: 'node20',
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'info',
});
