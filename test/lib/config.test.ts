import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultPublicUrl, loadConfig, originOf } from '../../src/config.ts';

describe('URLs built from the listening address', () => {
  it('puts an IPv6 host in brackets, and nothing else', () => {
    assert.equal(originOf('https', '::1', 8443), 'https://[::1]:8443');
    assert.equal(originOf('http', '127.0.0.1', 80), 'http://127.0.0.1:80');
    assert.equal(originOf('https', 'api.example.com', 443), 'https://api.example.com:443');
    assert.equal(defaultPublicUrl('::', 3000), 'https://[::]:3000');
  });

  it('ADS_PUBLIC_URL defaults to the HTTPS origin of ADS_HOST and ADS_PORT', () => {
    const config = loadConfig({ ADS_DATA_DIR: '/tmp/ads-config-test', ADS_HOST: '::1', ADS_PORT: '9443' });
    assert.equal(config.publicUrl, 'https://[::1]:9443');
    assert.equal(config.publicUrlGiven, false);
  });
});
