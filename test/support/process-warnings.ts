// kafkajs 2.2.4 arms timers with a negative delay, which Node 24 reports as a process warning on
// every connection (Node treats the delay as 1 ms). The services drop that one warning in
// runService; test workers do the same so real warnings stay visible.
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name !== "TimeoutNegativeWarning") {
    console.warn(`${warning.name}: ${warning.message}`);
  }
});
