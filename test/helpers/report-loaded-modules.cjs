// Preloaded (`--require`) into a spawned `ads` process: on exit, writes the files of every module
// Node's require loaded to ADS_TEST_LOADED_MODULES, so a test can see which packages a start used.
const fs = require('node:fs');

process.on('exit', () => {
  fs.writeFileSync(process.env.ADS_TEST_LOADED_MODULES, JSON.stringify(Object.keys(require.cache)));
});
