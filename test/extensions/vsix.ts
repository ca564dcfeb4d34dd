// Builds a real, minimal .vsix (the ZIP layout code-server's installer reads) for tests.
import AdmZip from 'adm-zip';

export function buildVsix(file: string, publisher: string, name: string, version = '1.0.0'): void {
  const zip = new AdmZip();
  zip.addFile('[Content_Types].xml', Buffer.from(
    '<?xml version="1.0" encoding="utf-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    + '<Default Extension=".json" ContentType="application/json"/><Default Extension=".vsixmanifest" ContentType="text/xml"/></Types>'));
  zip.addFile('extension.vsixmanifest', Buffer.from(
    '<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011">'
    + `<Metadata><Identity Language="en-US" Id="${name}" Version="${version}" Publisher="${publisher}"/><DisplayName>${name}</DisplayName><Description xml:space="preserve">test</Description></Metadata>`
    + '<Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation><Dependencies/>'
    + '<Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/></Assets></PackageManifest>'));
  zip.addFile('extension/package.json', Buffer.from(JSON.stringify({
    name, publisher, version, displayName: name, engines: { vscode: '^1.0.0' },
  })));
  zip.writeZip(file);
}
