/**
 * The photographs the demo's simulated accounts post (src/simulator/photos/): freely licensed
 * pictures taken from Debian packages, scaled once to at most 1080 px on their longer side (JPEG
 * quality 80, metadata dropped), and the CREDITS.md that names each one's author, licence and
 * source. Run it again to redo them from the same sources:
 *
 *   mkdir -p /tmp/photo-src && cd /tmp/photo-src
 *   apt-get download python3-skimage lomiri-wallpapers-16.04 lomiri-wallpapers-20.04
 *   for f in *.deb; do dpkg-deb -x "$f" .; done
 *   cd - && node --import tsx scripts/simulator-photos.ts /tmp/photo-src
 *
 * (tested with python3-skimage 0.19.3-8 and lomiri-wallpapers-16.04 / -20.04 20.04.0-2.) The
 * licences are those of each package's /usr/share/doc/<package>/copyright; the list of photos the
 * simulator draws from is src/simulator/photos.ts, which names the same files.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const OUT = fileURLToPath(new URL('../src/simulator/photos/', import.meta.url));
const LONG_SIDE = 1080;
const QUALITY = 80;

interface Source {
  /** The file written into src/simulator/photos/. */
  file: string;
  what: string;
  package: string;
  /** Path inside the package. */
  path: string;
  author: string;
  licence: 'CC0-1.0' | 'CC-BY-4.0' | 'CC-BY-SA-4.0' | 'CC-BY-SA-3.0';
  /** Where the package (or its upstream) states the licence of this file. */
  licenceSource: string;
}

const SKIMAGE = '/usr/lib/python3/dist-packages/skimage/data';
const LOMIRI = '/usr/share/backgrounds';
const LOMIRI_16 = 'the package copyright (`Files: 16.04/<name>`)';
const LOMIRI_20 = 'the package copyright (`Files: 20.04/<name>`)';

const SOURCES: Source[] = [
  {
    file: 'coffee.jpg',
    what: 'an espresso on a wooden table',
    package: 'python3-skimage',
    path: `${SKIMAGE}/coffee.png`,
    author: 'Rachel Michetti (courtesy of Pikolo Espresso Bar)',
    licence: 'CC0-1.0',
    licenceSource:
      'skimage/data/_fetchers.py, `coffee()`: "No copyright restrictions. CC0 by the photographer (Rachel Michetti)"',
  },
  {
    file: 'fig.jpg',
    what: 'half a fig in a red bowl',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/Picture_0B_by_freespace.jpg`,
    author: 'Trevor "Freespace", 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'table.jpg',
    what: 'a pallet table with wine, a drum on the floor',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/Wine_by_Jakkub_Mede.jpg`,
    author: 'Jakub Mede, 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'brushes.jpg',
    what: 'paint brushes in a jar',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/Picture_1A_by_freespace.jpg`,
    author: 'Trevor "Freespace", 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'dandelions.jpg',
    what: 'dandelion clocks in the evening sun',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/seeding_by_Clements_Engelhardt.jpg`,
    author: 'Clemens Engelhardt, 2018',
    licence: 'CC0-1.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'autumn-hills.jpg',
    what: 'a meadow and autumn woods below a mountain ridge',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/aitzgorri_by_Aitzol_Berasategi.jpg`,
    author: 'Aitzol Berasategi, 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'hill-sunset.jpg',
    what: 'sunset over the hills from a summit',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/sunset_by_Aitzol_Berasategi.jpg`,
    author: 'Aitzol Berasategi, 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'mountain-path.jpg',
    what: 'a path across a pasture towards rocky peaks',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/picosdeeuropa_by_Aitzol_Berasategi.jpg`,
    author: 'Aitzol Berasategi, 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'stream.jpg',
    what: 'a stream falling over rocks in a wood',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/life_by_Aitzol_Berasategi.jpg`,
    author: 'Aitzol Berasategi, 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'dogs.jpg',
    what: 'two spaniels looking out of a wooden hut',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/friends_by_Aitzol_Berasategi.jpg`,
    author: 'Aitzol Berasategi, 2018',
    licence: 'CC-BY-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'estuary.jpg',
    what: 'a bay at low tide seen between bridge cables',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/Bridge_by_Sander_Klootwijk.jpg`,
    author: 'Sander Klootwijk, 2018',
    licence: 'CC-BY-SA-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'dragonfly.jpg',
    what: 'a dragonfly on a twig against leaves and sky',
    package: 'lomiri-wallpapers-16.04',
    path: `${LOMIRI}/Dragonfly_by_Bolly.jpg`,
    author: '"Bolly", 2018',
    licence: 'CC-BY-SA-4.0',
    licenceSource: LOMIRI_16,
  },
  {
    file: 'nuthatch.jpg',
    what: 'a nuthatch on a tree trunk',
    package: 'lomiri-wallpapers-20.04',
    path: `${LOMIRI}/Kleiber_by_Lukas_Baubkus.jpg`,
    author: 'Lukas Baubkus, 2021',
    licence: 'CC-BY-SA-3.0',
    licenceSource: LOMIRI_20,
  },
];

const LICENCE_URL: Record<Source['licence'], string> = {
  'CC0-1.0': 'https://creativecommons.org/publicdomain/zero/1.0/',
  'CC-BY-4.0': 'https://creativecommons.org/licenses/by/4.0/',
  'CC-BY-SA-4.0': 'https://creativecommons.org/licenses/by-sa/4.0/',
  'CC-BY-SA-3.0': 'https://creativecommons.org/licenses/by-sa/3.0/',
};

async function main(root: string): Promise<void> {
  await mkdir(OUT, { recursive: true });
  const rows: string[] = [];
  let total = 0;
  for (const s of SOURCES) {
    const input = sharp(join(root, s.path)).rotate();
    const meta = await input.metadata();
    const out = await input
      .resize(LONG_SIDE, LONG_SIDE, { fit: 'inside', withoutEnlargement: true })
      .jpeg({ quality: QUALITY, mozjpeg: true })
      .toBuffer({ resolveWithObject: true });
    await writeFile(join(OUT, s.file), out.data);
    total += out.data.length;
    const change =
      meta.width === out.info.width
        ? `re-encoded as JPEG (quality ${QUALITY}), ${out.info.width}×${out.info.height}, metadata dropped`
        : `scaled from ${meta.width}×${meta.height} to ${out.info.width}×${out.info.height}, JPEG quality ${QUALITY}, metadata dropped`;
    rows.push(
      `| ${s.file} | ${s.what} | ${s.author} | [${s.licence}](${LICENCE_URL[s.licence]}) | Debian \`${s.package}\`, \`${s.path}\` | ${change} |`,
    );
    console.log(`${s.file}: ${out.info.width}x${out.info.height}, ${(out.data.length / 1024).toFixed(0)} KB`);
  }
  const credits = `# Photographs of the simulator's demo accounts

The demo's accounts (\`npm run demo\`: @demo.bakery and the accounts its consent page offers) post
these photographs (src/simulator/photos.ts lists them; other simulated accounts get generated
scenes). Each is taken from a Debian package and keeps its author's licence; the changes made are
in the last column, made by \`scripts/simulator-photos.ts\` (which also writes this file). When the
simulator serves one, it crops it to the post's size and writes a key into its EXIF description.

| file | what it shows | author | licence | source (package, original file) | changed |
|---|---|---|---|---|---|
${rows.join('\n')}

Where each licence is stated: for python3-skimage's coffee.png,
${SOURCES[0]?.licenceSource} (the package's copyright file puts scikit-image's code under
BSD-3-Clause); for the lomiri-wallpapers pictures, /usr/share/doc/lomiri-wallpapers-16.04/copyright
and /usr/share/doc/lomiri-wallpapers-20.04/copyright, one \`Files:\` stanza per picture.

The adapted CC-BY-SA pictures (estuary.jpg, dragonfly.jpg, nuthatch.jpg) are shared under the same
licence as their originals; the CC0 ones stay CC0. None of these files falls under the MIT licence
of feedmirror's code.
`;
  await writeFile(join(OUT, 'CREDITS.md'), credits);
  console.log(`${SOURCES.length} photos, ${(total / 1024).toFixed(0)} KB in all`);
}

const root = process.argv[2];
if (!root) {
  console.error('usage: node --import tsx scripts/simulator-photos.ts <folder the .deb files were extracted into>');
  process.exit(2);
}
await main(root);
