// The package's semantic version (CHANGELOG.md says what each one changed): /openapi.json's
// info.version. Imported, so that the bundle `npm start` runs carries it wherever it is built.
import pkg from '../package.json' with { type: 'json' }

export const PACKAGE_VERSION: string = pkg.version
