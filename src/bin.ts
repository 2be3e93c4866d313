console.log("hello from bin")
