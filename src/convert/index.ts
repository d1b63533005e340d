export { convertItem, convertItems, type ConvertOptions, type ConvertResult, type DroppedItem } from './convert-item.ts';
export { normalizeTimestamp } from './timestamp.ts';
export { originFromProfile, type OriginOptions } from './origin.ts';
export { buildFeed, type BuildFeedInput } from './feed.ts';
