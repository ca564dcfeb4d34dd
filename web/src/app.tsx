// The shell: header, navigation, notifications, and the view the URL's hash names.
import { useEffect, useState } from 'preact/hooks';

function currentRoute(): string {
  return location.hash.replace(/^#/, '') || '/';
}

export function App() {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const onHash = () => setRoute(currentRoute());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return (
    <>
      <header>
        <nav aria-label="Primary">
          <a href="#/">Servers</a> <a href="#/templates">Templates</a> <a href="#/logs">Logs</a> <a href="#/health">Health</a>
        </nav>
      </header>
      <main>
        <h1>Editor servers</h1>
        <p>{route}</p>
      </main>
    </>
  );
}
