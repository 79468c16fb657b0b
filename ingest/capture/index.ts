// Capture files: readers (pcap, ar, u64lp; detected by magic) and the writers `meridian record` uses.
export { readCapture, detectFormat, CAPTURE_FORMATS, type Capture, type CaptureFormat } from './read';
export { CaptureError, NotACaptureError } from './errors';
export { writePcap, type PcapWriteOptions } from './pcap';
export { writeU64lp } from './u64lp';
